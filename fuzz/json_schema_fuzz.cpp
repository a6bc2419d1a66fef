// libFuzzer target for the JSON Schema compiler and the token matcher. Input: a JSON schema,
// a 0x00 byte, then walk bytes. A schema that compiles (anything else must raise
// ringlm::Error) is indexed over a small synthetic vocabulary, and each walk byte drives one
// Matcher step: either try an arbitrary token (accept() must agree with the mask bit and must
// leave the matcher unchanged when refused) or accept the k-th allowed token, with occasional
// rollbacks (the mask after a rollback must equal the mask before the undone step).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "guided/matcher.h"
#include "guided/schema_compiler.h"
#include "guided/vocabulary.h"
#include "util/error.h"

namespace {

using ringlm::guided::Vocabulary;

std::shared_ptr<const Vocabulary> vocabulary() {
  static const std::shared_ptr<const Vocabulary> vocab = [] {
    std::vector<std::string> tokens;
    for (int c = 0x20; c < 0x7f; ++c) tokens.emplace_back(1, static_cast<char>(c));
    for (const char* t : {"\n", "\t", "\\n", "\\u00", "{\"", "\":", "\",\"", "\"}", "true", "false",
                          "null", "12", "0.5", "e-3", ", ", ": ", "é", "😀", "\xe2\x82", "\xac"})
      tokens.emplace_back(t);
    const auto stop = static_cast<std::uint32_t>(tokens.size());
    tokens.emplace_back();  // the stop token adds no bytes
    return std::make_shared<const Vocabulary>(std::move(tokens), std::vector<std::uint32_t>{stop});
  }();
  return vocab;
}

bool bit(const std::vector<std::uint32_t>& mask, std::uint32_t id) { return (mask[id >> 5] >> (id & 31)) & 1u; }

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "matcher finding: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ringlm;
  const auto* split = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
  const std::size_t schema_len = split ? static_cast<std::size_t>(split - data) : size;
  const auto schema = guided::Json::parse(data, data + schema_len, nullptr, false);
  if (schema.is_discarded()) return 0;
  guided::CompiledSchema compiled;
  try {
    compiled = guided::compile_schema(schema);
  } catch (const Error&) {
    return 0;
  }
  const auto vocab = vocabulary();
  auto index = std::make_shared<guided::GrammarIndex>(std::move(compiled.grammar), vocab);
  guided::Matcher matcher(index);
  const std::size_t words = vocab->mask_words();
  std::vector<std::uint32_t> mask(words), again(words);
  std::vector<std::vector<std::uint32_t>> masks;  // mask before each accepted token
  const std::uint8_t* walk = split ? split + 1 : data + size;
  const std::uint8_t* end = data + size;
  for (; walk < end && !matcher.is_stopped(); ++walk) {
    matcher.fill_mask(mask.data());
    const std::uint8_t b = *walk;
    if (b >= 0xF0 && matcher.num_accepted() > 0) {  // roll back one token
      matcher.rollback(1);
      matcher.fill_mask(again.data());
      if (again != masks.back()) finding("mask after rollback differs");
      masks.pop_back();
      continue;
    }
    std::uint32_t id;
    if (b & 1) {
      id = static_cast<std::uint32_t>(b >> 1) % vocab->size();
    } else {
      std::vector<std::uint32_t> allowed;
      for (std::uint32_t t = 0; t < vocab->size(); ++t)
        if (bit(mask, t)) allowed.push_back(t);
      if (allowed.empty()) break;
      id = allowed[(b >> 1) % allowed.size()];
    }
    const std::size_t before = matcher.num_accepted();
    const bool ok = matcher.accept(id);
    if (ok != bit(mask, id)) finding("accept() disagrees with the mask");
    if (ok) {
      masks.push_back(mask);
    } else {
      if (matcher.num_accepted() != before) finding("refused token changed the matcher");
      matcher.fill_mask(again.data());
      if (again != mask) finding("refused token changed the mask");
    }
  }
  return 0;
}
