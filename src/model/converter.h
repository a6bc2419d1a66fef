// `ringlm convert`: a Hugging Face Gemma 4 checkpoint directory -> a packed model directory
// (packed_format.h, docs/convert.md) that Model::load maps with no work at load time.
//
// The linear layers are quantized exactly as quantize_weights_q4_0 does at load (ggml q4_0
// rounding, q4p16 layout), so `--weights q4_0` gives the same numbers on both; the token and
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

namespace ringlm::model {

struct ConvertResult {
  int q4_matrices = 0;        // stored as q4p16
  int f32_matrices = 0;       // input width not a multiple of 32 (tiny test models only)
  std::uint64_t packed_bytes = 0;   // weights.rlpk
  std::uint64_t sidecar_bytes = 0;  // the seven sidecar files
  std::vector<std::string> copied;  // config / tokenizer files copied
};

// Throws ringlm::Error naming the file / tensor on a bad checkpoint, an unwritable output, a
// model without per-layer embeddings, or out_dir equal to the checkpoint directory.
ConvertResult convert_to_packed_dir(const std::filesystem::path& hf_dir, const std::filesystem::path& out_dir);

}  // namespace ringlm::model
