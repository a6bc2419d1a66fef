// Gemma 4 models in GGUF files: load one (weights stay in the file's mapping, config from
// gemma4.* metadata) and write one from any checkpoint (the basis of `ringlm convert --to gguf`).
#pragma once

#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "io/gguf_tokenizer.h"
#include "io/gguf_writer.h"
#include "io/tensor.h"
#include "kernels/q4_lattice.h"
#include "model/model.h"

namespace ringlm::model {

// The model config of a gemma4 GGUF file (via io::gemma4_text_config).
ModelConfig load_gguf_model_config(const io::GgufFile& file);

// Loads a gemma4 GGUF file. Throws ringlm::Error naming the file, key or tensor.
std::shared_ptr<const Model> load_gguf_model(const std::filesystem::path& path, const ModelOptions& options = {});

// A GGUF file (by its magic bytes) through load_gguf_model, anything else as a Hugging Face
// checkpoint directory through Model::load.
std::shared_ptr<const Model> load_model_any(const std::filesystem::path& path, const ModelOptions& options = {});

struct GgufExportOptions {
  // Type of the matrices (2-D tensors): F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K or Q6_K.
  // A matrix already in this type is copied byte for byte. Vectors are always F32, as
  // llama.cpp's converter writes them. Matrices whose rows are not a multiple of the block
  // size are written as F16 (a note is counted in the result).
  io::DType matrix_type = io::DType::BF16;
  std::uint32_t alignment = 32;
};

struct GgufExportResult {
  int tensors = 0;
  int fallback_f16 = 0;  // matrices that could not take matrix_type
  // Q4_0 from float weights: blocks on an int4 lattice, and of them those stored exactly
  // (kernels/q4_lattice.h); lattice - exact = blocks whose scale the f16 d could not hold.
  kernels::Q4LatticeStats q4;
};

// llama.cpp's general.file_type (llama_ftype) of a file whose matrices are all `matrix_type`.
std::uint32_t llama_file_type(io::DType matrix_type);

// Adds `tensor` as `gguf_name` to `w` as export_gemma4_gguf writes every tensor: vectors
// F32, matrices converted to `matrix_type` (F16 where a row is not whole blocks, counted in
// result.fallback_f16), lazily at w.write(), so `tensor` must stay valid until then.
void add_gguf_tensor(io::GgufWriter& w, const std::string& gguf_name, const io::TensorView& tensor, io::DType matrix_type,
                     GgufExportResult& result);

// Writes `source` (canonical names) with `text_config` (Hugging Face Gemma4TextConfig JSON)
// and, if given, the tokenizer as a gemma4 GGUF file llama.cpp's format rules accept.
GgufExportResult export_gemma4_gguf(const io::TensorSource& source, const nlohmann::json& text_config,
                                    const io::GgufTokenizerData* tokenizer, const std::filesystem::path& out,
                                    const GgufExportOptions& options = {});

}  // namespace ringlm::model
