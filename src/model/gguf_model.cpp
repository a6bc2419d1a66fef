#include "model/gguf_model.h"

#include <algorithm>

#include "io/gguf_gemma4.h"
#include "io/gguf_reader.h"
#include "io/gguf_writer.h"
#include "kernels/dequant_ggml.h"
#include "kernels/q4_lattice.h"
#include "kernels/ref_matmul.h"
#include "model/tensor_manifest.h"
#include "util/error.h"

namespace ringlm::model {

ModelConfig load_gguf_model_config(const io::GgufFile& file) {
  return parse_model_config(io::gemma4_text_config(file).dump(), file.path());
}

std::shared_ptr<const Model> load_gguf_model(const std::filesystem::path& path, const ModelOptions& options) {
  auto file = std::make_shared<const io::GgufFile>(path);
  ModelConfig config = load_gguf_model_config(*file);
  return Model::from_source(std::move(config), gguf_tensor_source(file), options);
}

std::shared_ptr<const Model> load_model_any(const std::filesystem::path& path, const ModelOptions& options) {
  if (std::filesystem::is_regular_file(path) && io::is_gguf_file(path)) return load_gguf_model(path, options);
  return Model::load(path, options);
}

std::uint32_t llama_file_type(io::DType matrix_type) {
  switch (matrix_type) {
    case io::DType::F32: return 0;
    case io::DType::F16: return 1;
    case io::DType::BF16: return 32;
    case io::DType::Q4_0: return 2;
    case io::DType::Q4_1: return 3;
    case io::DType::Q8_0: return 7;
    case io::DType::Q4_K: return 14;  // Q4_K_S: every matrix Q4_K
    case io::DType::Q5_K: return 16;  // Q5_K_S
    case io::DType::Q6_K: return 18;
    default: fail("GGUF export: unsupported matrix type ", io::dtype_name(matrix_type));
  }
}

void add_gguf_tensor(io::GgufWriter& w, const std::string& gguf_name, const io::TensorView& tensor, io::DType matrix_type,
                     GgufExportResult& result) {
  const io::TensorView* v = &tensor;  // the fill runs at write(); the source outlives it
  io::DType target = v->shape.size() <= 1 ? io::DType::F32 : matrix_type;
  const std::int64_t cols = v->shape.empty() ? 1 : v->shape.back();
  if (cols % kernels::block_format(target).block_elems != 0) {
    target = io::DType::F16;
    ++result.fallback_f16;
  }
  std::vector<std::int64_t> ne(v->shape.rbegin(), v->shape.rend());
  if (ne.empty()) ne = {1};
  const std::int64_t rows = v->numel() / cols;
  kernels::Q4LatticeStats* q4 = &result.q4;
  w.add_tensor_lazy(gguf_name, io::ggml_type_of(target), ne, [v, target, rows, cols, q4](std::uint8_t* dst) {
    if (v->dtype == target) {
      std::copy(v->data, v->data + v->nbytes, dst);
      return;
    }
    const bool float_source = v->dtype == io::DType::F32 || v->dtype == io::DType::F16 || v->dtype == io::DType::BF16;
    if (target == io::DType::Q4_0 && float_source) {
      // Lattice blocks keep their codes and scale (q4_lattice.h); a GGUF block has only its
      // f16 d, so a lattice scale f16 cannot hold is rounded, and counted in q4->exact's gap.
      std::vector<float> row(static_cast<std::size_t>(cols));
      auto* blocks = reinterpret_cast<kernels::BlockQ4_0*>(dst);
      const std::int64_t nb = cols / static_cast<std::int64_t>(kernels::kQBlock);
      for (std::int64_t r = 0; r < rows; ++r) {
        kernels::load_row_f32(kernels::WeightMatrix{v->dtype, v->data, rows, cols}, r, row.data());
        kernels::quantize_row_q4_0_lattice(row.data(), v->dtype, blocks + r * nb, static_cast<std::size_t>(cols), false, q4);
      }
      return;
    }
    // Row by row through float32: dequantize / upcast, then quantize / downcast.
    std::vector<float> row(static_cast<std::size_t>(cols));
    const std::int64_t src_row = kernels::row_bytes(v->dtype, cols), dst_row = kernels::row_bytes(target, cols);
    for (std::int64_t r = 0; r < rows; ++r) {
      kernels::dequantize_row(v->dtype, v->data + r * src_row, row.data(), cols);
      kernels::quantize_row(target, row.data(), dst + r * dst_row, cols);
    }
  });
  ++result.tensors;
}

GgufExportResult export_gemma4_gguf(const io::TensorSource& source, const nlohmann::json& text_config,
                                    const io::GgufTokenizerData* tokenizer, const std::filesystem::path& out,
                                    const GgufExportOptions& options) {
  io::GgufWriter w(options.alignment);
  io::gemma4_write_metadata(w, text_config);
  w.add_string("general.name", "gemma4 (ringlm export)");
  // llama.cpp's file type of a file whose matrices are all of one type (llama_ftype), and the
  // quantization format version its converter writes with quantized files.
  const std::uint32_t file_type = llama_file_type(options.matrix_type);
  w.add_u32("general.file_type", file_type);
  w.add_u32("general.quantization_version", 2);
  if (tokenizer) io::gguf_write_tokenizer(w, *tokenizer);
  GgufExportResult result;
  auto names = source.names();
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const io::TensorView* v = source.find(name);
    const auto gguf_name = gemma4_gguf_name(name);
    if (!gguf_name || name == "rope_freqs.weight") continue;  // rope_freqs is regenerated below
    add_gguf_tensor(w, *gguf_name, *v, options.matrix_type, result);
  }
  const auto ff = io::gemma4_rope_freqs(text_config);
  if (!ff.empty()) {
    w.add_tensor("rope_freqs.weight", io::ggml_type_of(io::DType::F32), {static_cast<std::int64_t>(ff.size())},
                 {reinterpret_cast<const std::uint8_t*>(ff.data()), ff.size() * 4});
    ++result.tensors;
  }
  w.write(out);
  return result;
}

}  // namespace ringlm::model
