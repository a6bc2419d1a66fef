// Shared helpers for the tokenizer tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ringlm::testing {

inline std::filesystem::path gemma_tokenizer_dir() {
  return std::filesystem::path(RINGLM_TOKENIZER_DIR);
}

// The real Gemma 4 tokenizer, loaded once per test binary.
inline const Tokenizer& gemma_tokenizer() {
  static const Tokenizer tok = Tokenizer::load(gemma_tokenizer_dir());
  return tok;
}

inline std::string read_text_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ringlm::testing
