// The normalizer and pre-tokenizer stages of the encoder, configured from TokenizerParts.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_parts.h"

namespace ringlm::tok {

class Normalizer {
 public:
  Normalizer() = default;
  explicit Normalizer(std::vector<NormalizerStep> steps) : steps_(std::move(steps)) {}
  bool empty() const { return steps_.empty(); }
  // Normalizes `in` into `out` (replacing its contents). `tmp` is scratch space.
  void apply(std::string_view in, std::string& out, std::string& tmp) const;

 private:
  std::vector<NormalizerStep> steps_;
};

// Words produced by the pre-tokenizer are views into the normalized text or into `store`.
struct PreTokenizerScratch {
  std::vector<std::string_view> words, next;
  std::deque<std::string> store;
};

class PreTokenizer {
 public:
  PreTokenizer() = default;
  explicit PreTokenizer(std::vector<PreTokenizerStep> steps) : steps_(std::move(steps)) {}
  // Splits `text` into scratch.words. `at_origin`: this text starts the whole input (for
  // Metaspace's "first" prepend scheme).
  void apply(std::string_view text, bool at_origin, PreTokenizerScratch& scratch) const;

 private:
  std::vector<PreTokenizerStep> steps_;
};

}  // namespace ringlm::tok
