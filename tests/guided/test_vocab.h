// Synthetic vocabularies and helpers for the guided-generation tests.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "guided/matcher.h"
#include "guided/schema_compiler.h"
#include "guided/vocabulary.h"

namespace ringlm::guided::testing {

// All 256 single bytes (ids 0..255), a set of multi-byte tokens that span grammar elements,
// an empty "special" token, and a stop token (the last id).
inline std::shared_ptr<const Vocabulary> synthetic_vocab() {
  std::vector<std::string> t;
  for (int b = 0; b < 256; ++b) t.push_back(std::string(1, char(b)));
  for (const char* s : {"{\"", "\"}", "\",", "\":", "\", \"", "\": \"", "\"]", "[\"", "true", "false", "null",
                        "name", "age", "tags", " \"", ", ", ": ", "ab", "abc", "12", "345", "\xC3\xA9", "\\n",
                        "\\\"", "\"},{\"", "}]", "]}", "\"}]", "0.5", "-1", "e+", "\": ", "\": [", "id", "\xE2\x82",
                        "\xAC", "2024-", "01-", "T12:", "Z\"", "hello world", "\": {\"", "\": 1", ",\"", ":\""}) {
    t.push_back(s);
  }
  t.push_back("");         // special token: never allowed
  t.push_back("<eos>");    // placeholder bytes; marked as stop below
  uint32_t eos = uint32_t(t.size() - 1);
  t[eos] = "";
  return std::make_shared<Vocabulary>(t, std::vector<uint32_t>{eos});
}

// Greedy longest-match tokenisation (stop and empty tokens excluded).
inline std::vector<uint32_t> greedy_tokenize(const Vocabulary& v, const std::string& text) {
  std::vector<uint32_t> out;
  size_t pos = 0;
  while (pos < text.size()) {
    uint32_t best = UINT32_MAX;
    size_t best_len = 0;
    for (uint32_t id = 0; id < v.size(); ++id) {
      const std::string& b = v.bytes(id);
      if (b.empty() || b.size() <= best_len || v.is_stop(id)) continue;
      if (text.compare(pos, b.size(), b) == 0) best = id, best_len = b.size();
    }
    out.push_back(best);
    pos += best_len;
  }
  return out;
}

inline bool mask_has(const std::vector<uint32_t>& m, uint32_t id) { return (m[id >> 5] >> (id & 31)) & 1; }

inline std::shared_ptr<GrammarIndex> index_for(const Json& schema, std::shared_ptr<const Vocabulary> vocab,
                                               Whitespace ws = Whitespace::kCompact) {
  CompileOptions opt;
  opt.whitespace = ws;
  return std::make_shared<GrammarIndex>(compile_schema(schema, opt).grammar, std::move(vocab));
}

// Feeds `text` token by token; returns true when every token is accepted (and in the mask)
// and the end is accepting.
inline bool accepts_text(const std::shared_ptr<GrammarIndex>& idx, const std::string& text, bool check_mask = true) {
  Matcher m(idx);
  const Vocabulary& v = idx->vocab();
  std::vector<uint32_t> mask(v.mask_words());
  for (uint32_t tok : greedy_tokenize(v, text)) {
    if (check_mask) {
      m.fill_mask(mask.data());
      bool in_mask = mask_has(mask, tok);
      bool ok = m.accept(tok);
      if (in_mask != ok) throw std::runtime_error("mask and accept disagree on token " + std::to_string(tok));
      if (!ok) return false;
    } else if (!m.accept(tok)) {
      return false;
    }
  }
  return m.is_accepting();
}

}  // namespace ringlm::guided::testing
