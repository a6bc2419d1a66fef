// Random-weight Gemma 4 checkpoints in the Hugging Face layout, for tests and benchmarks.
// `tiny` keeps every structural feature of E2B at toy size (both attention kinds with at
// least two owning layers each, KV sharing of both kinds, double-wide MLP, per-layer
// embeddings, a 16-token sliding window); `tiny-gqa` is the same with 2 KV heads; `e2b` and
// `e4b` are full size. Weights are drawn with scales that keep activations and logits healthy.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/safetensors_writer.h"
#include "io/tensor.h"

namespace ringlm::model::testing {

struct TestCheckpointOptions {
  std::string preset = "tiny";           // tiny | tiny-gqa | e2b | e4b
  std::uint64_t seed = 1;
  io::DType dtype = io::DType::BF16;     // BF16 | F16 | F32
  int shards = 1;                        // > 1: model-0000k-of-0000n.safetensors + index
  bool flat_config = false;              // text config at top level instead of text_config
  std::string prefix = "model.language_model.";
  bool with_shared_kv = false;           // also store unused k/v/k_norm on KV-shared layers
  // Like a QAT checkpoint (docs/quantization.md): the matrices q4_0 would quantize (linear
  // layers with input width % 32 == 0, and the token embedding, the tied head) lie exactly on
  // an int4 lattice with bf16 block scales, stored as float32 so every value c * s is exact.
  bool qat = false;
  std::filesystem::path tokenizer_dir;   // e2b/e4b (and the tiny chat template): real tokenizer files
  // More tensors stored after the text decoder's, names as stored (e.g. a vision tower,
  // vision/testing/test_vision_tower.h), with the filler that writes their bytes.
  std::vector<io::TensorSpec> extra_tensors;
  io::TensorFiller extra_filler;
};

// The config.json text write_test_checkpoint() writes for these options.
std::string test_checkpoint_config_json(const TestCheckpointOptions& options);

// Writes config.json, generation_config.json, the safetensors file(s) and tokenizer files.
void write_test_checkpoint(const std::filesystem::path& out_dir, const TestCheckpointOptions& options);

// Writes tokenizer.json + tokenizer_config.json of a small valid HF BPE tokenizer (byte
// fallback, Gemma's special ids 0-3 and control tokens at Gemma's ids, 256 byte tokens,
// a few hundred merges) with exactly `vocab_size` tokens. `chat_template` may be empty.
void write_tiny_tokenizer(const std::filesystem::path& out_dir, int vocab_size, const std::string& chat_template);

}  // namespace ringlm::model::testing
