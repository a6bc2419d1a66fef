#include "model/weights.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "kernels/dequant_blocks.h"
#include "kernels/dequant_ggml.h"
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
  const std::int64_t H = c.hidden_size;
  w.embed_tokens = b.matrix("embed_tokens.weight", c.vocab_size, H);
  // A tied model may still carry its own head copy: ringlm's packed directory stores the head
  // in q4p16 next to the int8 embedding rows.
  w.lm_head = c.tie_word_embeddings && !source.find("lm_head.weight") ? w.embed_tokens
                                                                       : b.matrix("lm_head.weight", c.vocab_size, H);
  w.final_norm = b.vector("norm.weight", H);
  if (c.ple_dim > 0) {
    const std::int64_t total = static_cast<std::int64_t>(c.num_layers) * c.ple_dim;
    w.embed_tokens_ple = b.matrix("embed_tokens_per_layer.weight", c.ple_vocab_size, total);
    w.ple_model_projection = b.matrix("per_layer_model_projection.weight", total, H);
    w.ple_projection_norm = b.vector("per_layer_projection_norm.weight", c.ple_dim);
  }
  w.layers.resize(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    const LayerConfig& L = c.layers[l];
    LayerWeights& lw = w.layers[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    const std::int64_t d = L.head_dim;
    lw.input_norm = b.vector(p + "input_layernorm.weight", H);
    lw.post_attention_norm = b.vector(p + "post_attention_layernorm.weight", H);
    lw.pre_feedforward_norm = b.vector(p + "pre_feedforward_layernorm.weight", H);
    lw.post_feedforward_norm = b.vector(p + "post_feedforward_layernorm.weight", H);
    lw.q_proj = b.matrix(p + "self_attn.q_proj.weight", c.num_heads * d, H);
    lw.q_norm = b.vector(p + "self_attn.q_norm.weight", d);
    lw.o_proj = b.matrix(p + "self_attn.o_proj.weight", H, c.num_heads * d);
    if (L.owns_kv) {
      lw.k_proj = b.matrix(p + "self_attn.k_proj.weight", L.n_kv_heads * d, H);
      lw.v_proj = b.matrix(p + "self_attn.v_proj.weight", L.n_kv_heads * d, H);
      lw.k_norm = b.vector(p + "self_attn.k_norm.weight", d);
    }
    lw.gate_proj = b.matrix(p + "mlp.gate_proj.weight", L.mlp_width, H);
    lw.up_proj = b.matrix(p + "mlp.up_proj.weight", L.mlp_width, H);
    lw.down_proj = b.matrix(p + "mlp.down_proj.weight", H, L.mlp_width);
    if (c.ple_dim > 0) {
      lw.ple_gate = b.matrix(p + "per_layer_input_gate.weight", c.ple_dim, H);
      lw.ple_projection = b.matrix(p + "per_layer_projection.weight", H, c.ple_dim);
      lw.post_ple_norm = b.vector(p + "post_per_layer_input_norm.weight", H);
    }
    lw.layer_scalar = b.vector(p + "layer_scalar", 1)[0];
  }
  return w;
}

}  // namespace ringlm::model
