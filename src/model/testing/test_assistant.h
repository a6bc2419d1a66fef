// Random-weight Gemma 4 assistant (MTP drafter) checkpoints in the Hugging Face layout
// (model/assistant.h), for tests and benchmarks: `ringlm make-test-model --assistant`.
// `tiny` fits the tiny test model (backbone 64, 768 tokens, 16-token window) with the
// centroid head (8 centroids, top 2); `tiny-dense` is the same with the dense tied head;
// `micro` fits no target (backbone 32, 64 tokens, 4 centroids): the fuzz seed's shape;
// `demo` fits the demo model (tiny with the real 262,144-token vocabulary; 2048 centroids, top 32);
// `e2b` has the published E2B assistant's shapes (config values in docs/speculative.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "util/dtype.h"

namespace ringlm::model::testing {

struct TestAssistantOptions {
  std::string preset = "tiny";  // tiny | tiny-dense | micro | demo | e2b
  std::uint64_t seed = 1;
  io::DType dtype = io::DType::BF16;  // BF16 | F16 | F32
};

// Writes config.json and model.safetensors.
void write_test_assistant(const std::filesystem::path& out_dir, const TestAssistantOptions& options);

// Writes the same assistant as one gemma4-assistant GGUF file (model/assistant_gguf.h) whose
// matrices are `matrix_type` (F32, F16, BF16, Q8_0 or Q4_0; quantized types are made from
// float32 weights). Goes through a safetensors checkpoint in OUT.safetensors.tmp, removed afterwards.
void write_test_assistant_gguf(const std::filesystem::path& out_file, const TestAssistantOptions& options,
                               io::DType matrix_type);

}  // namespace ringlm::model::testing
