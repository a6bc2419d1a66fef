// `ringlm convert`: a Hugging Face Gemma 4 checkpoint directory -> a packed model directory
// (packed_format.h, docs/convert.md) that Model::load maps with no work at load time.
//
// The linear layers are quantized exactly as quantize_weights_q4_0 does at load (blocks on an
// int4 lattice kept exactly, others with ggml's q4_0 rounding, kernels/q4_lattice.h; q4p16
// layout plus each row's power-of-two factor), so `--weights q4_0` gives the same numbers on both; the token and
// per-layer embeddings become the model card's int8 sidecar. Every file is written to a
// temporary name and renamed when complete (weights.rlpk last, so an interrupted run never
// leaves a directory that loads), tables are streamed in row chunks (memory stays bounded
// by one chunk, never a whole table), and the quantization of each chunk is split over the
// kernel thread pool.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/q4_lattice.h"

namespace ringlm::model {

struct ConvertResult {
  int q4_matrices = 0;        // stored as q4p16
  int f32_matrices = 0;       // input width not a multiple of 32 (tiny test models only)
  std::uint64_t packed_bytes = 0;   // weights.rlpk
  std::uint64_t sidecar_bytes = 0;  // the seven sidecar files
  std::vector<std::string> copied;  // config / tokenizer files copied
  kernels::Q4LatticeStats q4;       // q4_0 blocks: on an int4 lattice, stored exactly (q4_lattice.h)
  std::uint64_t row_factor_bytes = 0;  // what the row factors cost in weights.rlpk (4 bytes a row)
};

// Throws ringlm::Error naming the file / tensor on a bad checkpoint, an unwritable output, a
// model without per-layer embeddings, or out_dir equal to the checkpoint directory.
ConvertResult convert_to_packed_dir(const std::filesystem::path& hf_dir, const std::filesystem::path& out_dir);

}  // namespace ringlm::model
