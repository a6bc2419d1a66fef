#include "model/weights.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "kernels/dequant_blocks.h"
#include "kernels/dequant_ggml.h"
#include "model/tensor_manifest.h"
#include "util/error.h"
#include "util/float16.h"

namespace ringlm::model {
namespace {

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

// An fp16 bit pattern that is Inf or NaN (all exponent bits set).
bool fp16_not_finite(std::uint16_t h) { return (h & 0x7C00u) == 0x7C00u; }

// Refuses a quantized matrix whose block scales (or int8 row scales) are not finite: such a
// checkpoint loads, then every logit is NaN and generation emits one token forever. Only the
// scales are read (one fp16 per 32 or 256 values), not every weight: see docs/model.md.
template <typename Block, typename Fields>
void check_blocks(const io::TensorView& v, const std::string& name, Fields fields) {
  const std::int64_t n = v.shape[0] * v.shape[1] / static_cast<std::int64_t>(kernels::block_format(v.dtype).block_elems);
  const auto* bytes = static_cast<const unsigned char*>(v.data);
  for (std::int64_t b = 0; b < n; ++b) {
    Block blk;
    std::memcpy(&blk, bytes + b * static_cast<std::int64_t>(sizeof(Block)), sizeof(Block));
    if (!fields(blk)) {
      const std::int64_t per_row = v.shape[1] / kernels::block_format(v.dtype).block_elems;
      fail(v.file, ": tensor ", name, ": block scale of row ", b / per_row, " (block ", b % per_row,
           ") is not a finite number (NaN or Inf)");
    }
  }
}

void check_scales(const io::TensorView& v, const std::string& name) {
  if (v.row_scales) {
    for (std::int64_t r = 0; r < v.shape[0]; ++r) {
      if (!std::isfinite(v.row_scales[r])) fail(v.file, ": tensor ", name, ": scale of row ", r, " is not a finite number");
    }
  }
  if (v.packed || v.shape.size() != 2) return;  // ringlm's own q4p16 layout is written by ringlm
  using namespace kernels;
  switch (v.dtype) {
    case io::DType::Q8_0: return check_blocks<BlockQ8_0>(v, name, [](const BlockQ8_0& b) { return !fp16_not_finite(b.d); });
    case io::DType::Q4_0: return check_blocks<BlockQ4_0>(v, name, [](const BlockQ4_0& b) { return !fp16_not_finite(b.d); });
    case io::DType::Q4_1:
      return check_blocks<BlockQ4_1>(v, name, [](const BlockQ4_1& b) { return !fp16_not_finite(b.d) && !fp16_not_finite(b.m); });
    case io::DType::Q4_K:
      return check_blocks<BlockQ4_K>(v, name, [](const BlockQ4_K& b) { return !fp16_not_finite(b.d) && !fp16_not_finite(b.dmin); });
    case io::DType::Q5_K:
      return check_blocks<BlockQ5_K>(v, name, [](const BlockQ5_K& b) { return !fp16_not_finite(b.d) && !fp16_not_finite(b.dmin); });
    case io::DType::Q6_K: return check_blocks<BlockQ6_K>(v, name, [](const BlockQ6_K& b) { return !fp16_not_finite(b.d); });
    case io::DType::Q5_0: return check_blocks<BlockQ5_0>(v, name, [](const BlockQ5_0& b) { return !fp16_not_finite(b.d); });
    case io::DType::Q5_1:
      return check_blocks<BlockQ5_1>(v, name, [](const BlockQ5_1& b) { return !fp16_not_finite(b.d) && !fp16_not_finite(b.m); });
    case io::DType::Q2_K:
      return check_blocks<BlockQ2_K>(v, name, [](const BlockQ2_K& b) { return !fp16_not_finite(b.d) && !fp16_not_finite(b.dmin); });
    case io::DType::Q3_K: return check_blocks<BlockQ3_K>(v, name, [](const BlockQ3_K& b) { return !fp16_not_finite(b.d); });
    case io::DType::IQ4_NL:
      return check_blocks<BlockIQ4_NL>(v, name, [](const BlockIQ4_NL& b) { return !fp16_not_finite(b.d); });
    case io::DType::IQ4_XS:
      return check_blocks<BlockIQ4_XS>(v, name, [](const BlockIQ4_XS& b) { return !fp16_not_finite(b.d); });
    case io::DType::IQ2_XXS:
      return check_blocks<BlockIQ2_XXS>(v, name, [](const BlockIQ2_XXS& b) { return !fp16_not_finite(b.d); });
    case io::DType::IQ2_XS:
      return check_blocks<BlockIQ2_XS>(v, name, [](const BlockIQ2_XS& b) { return !fp16_not_finite(b.d); });
    case io::DType::IQ2_S: return check_blocks<BlockIQ2_S>(v, name, [](const BlockIQ2_S& b) { return !fp16_not_finite(b.d); });
    case io::DType::IQ3_XXS:
      return check_blocks<BlockIQ3_XXS>(v, name, [](const BlockIQ3_XXS& b) { return !fp16_not_finite(b.d); });
    case io::DType::IQ3_S: return check_blocks<BlockIQ3_S>(v, name, [](const BlockIQ3_S& b) { return !fp16_not_finite(b.d); });
    case io::DType::IQ1_S: return check_blocks<BlockIQ1_S>(v, name, [](const BlockIQ1_S& b) { return !fp16_not_finite(b.d); });
    case io::DType::IQ1_M:
      return check_blocks<BlockIQ1_M>(v, name, [](const BlockIQ1_M& b) { return !fp16_not_finite(iq1m_block_scale(b)); });
    default: return;  // float matrices: a full pass over every weight (see check_scales' comment)
  }
}

class Binder {
 public:
  explicit Binder(const io::TensorSource& source) : source_(source) {}

  const io::TensorView& tensor(const std::string& name, const std::vector<std::int64_t>& shape) {
    const io::TensorView* v = source_.find(name);
    if (!v) fail_model_file(source_.describe(), ": missing tensor ", name, " (expected shape ", shape_string(shape), ")");
    const bool float_type = v->dtype == io::DType::F32 || v->dtype == io::DType::F16 || v->dtype == io::DType::BF16;
    // ggml block formats (from GGUF) are decoded row by row; rows must hold whole blocks.
    const bool block_type = !float_type && v->dtype != io::DType::I8 && !shape.empty() &&
                            shape.back() % kernels::block_format(v->dtype).block_elems == 0;
    // int8 rows with one f32 scale each (the packed directory's sidecar tables).
    const bool scaled_i8 = v->dtype == io::DType::I8 && v->row_scales != nullptr && shape.size() == 2;
    if (!float_type && !block_type && !scaled_i8)
      fail_model_file(v->file, ": tensor ", name, ": unsupported dtype ", io::dtype_name(v->dtype),
           " (expected F32, F16, BF16, a ggml block type with whole blocks per row, or int8 rows with scales)");
    if (v->shape != shape)
      fail_model_file(v->file, ": tensor ", name, ": expected shape ", shape_string(shape), ", got ", shape_string(v->shape));
    return *v;
  }

  WeightMatrix matrix(const std::string& name, std::int64_t rows, std::int64_t cols) {
    const io::TensorView& v = tensor(name, {rows, cols});
    check_scales(v, name);
    WeightMatrix m{v.dtype, v.data, rows, cols};
    m.packed = v.packed;
    m.row_scales = v.row_scales;
    return m;
  }

  std::vector<float> vector(const std::string& name, std::int64_t n) {
    const io::TensorView& v = tensor(name, {n});
    std::vector<float> out(n);
    kernels::load_row_f32(WeightMatrix{v.dtype, v.data, 1, n}, 0, out.data());
    for (std::int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(out[i])) fail(v.file, ": tensor ", name, ": element ", i, " is ", out[i], " (not a finite number)");
    }
    return out;
  }

 private:
  const io::TensorSource& source_;
};

}  // namespace

ModelWeights bind_weights(const io::TensorSource& source, const ModelConfig& c) {
  Binder b(source);
  ModelWeights w;
  w.layers.resize(c.num_layers);
  for (const ManifestTensor& t : manifest_tensors(c)) {
    // A tied model may still carry its own head copy: ringlm's packed directory stores the
    // head in q4p16 next to the int8 embedding rows. Without one the embedding serves.
    if (t.entry->presence == Presence::head && !t.present && !source.find(t.name)) {
      w.lm_head = w.embed_tokens;
      continue;
    }
    if (!t.present && t.entry->presence != Presence::head) continue;
    if (WeightMatrix* m = matrix_of(w, t)) *m = b.matrix(t.name, t.shape[0], t.shape[1]);
    else if (std::vector<float>* v = vector_of(w, t)) *v = b.vector(t.name, t.shape[0]);
    else *scalar_of(w, t) = b.vector(t.name, 1)[0];
  }
  return w;
}

}  // namespace ringlm::model
