// The GGUF export shared by `ringlm export-gguf` and `ringlm convert --out FILE.gguf`.
#pragma once

#include <string>

namespace ringlm::cli {

// Writes the Hugging Face checkpoint `dir` as the gemma4 GGUF file `out` with matrices of
// `type` (f32 f16 bf16 q8_0 q4_0 q4_1 q4_k q5_k q6_k, any case) and prints one summary line.
void export_gguf(const std::string& dir, const std::string& out, const std::string& type, bool no_tokenizer);

}  // namespace ringlm::cli
