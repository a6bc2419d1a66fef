// engine/token_respelling: the cache's own spelling of a text is kept, control tokens never
// trade places with text, and nothing changes when the prompt really differs.
#include "engine/token_respelling.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace {

using ringlm::Tokenizer;
using Ids = std::vector<std::int32_t>;

const Tokenizer& tok() {
  static const Tokenizer t = Tokenizer::load(std::filesystem::path(RINGLM_TOKENIZER_DIR));
  return t;
}

Ids enc(std::string_view s) { return tok().encode(s); }
Ids cat(Ids a, const Ids& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(TokenRespelling, KeepsTheCachedSpellingOfTheSameText) {
  const Ids head = enc("Tell me about the weather");
  // The model wrote " tomorrow" as two pieces; encoding the text gives one token.
  const Ids odd = cat(enc(" tomor"), enc("row"));
  const Ids canonical = enc(" tomorrow");
  ASSERT_NE(odd, canonical);
  ASSERT_EQ(tok().decode(odd), tok().decode(canonical));
  const Ids cached = cat(head, odd);
  const Ids tail = cat(Ids{106}, enc("next question"));
  const Ids prompt = cat(cat(head, canonical), tail);
  Ids out;
  const std::size_t matched = ringlm::engine::respell_like_cache(tok(), cached, prompt, out);
  EXPECT_EQ(matched, cached.size());
  EXPECT_EQ(out, cat(cached, tail));
  EXPECT_EQ(tok().decode(out), tok().decode(prompt));
}

TEST(TokenRespelling, ChangesNothingWhereTheTextDiffers) {
  const Ids cached = enc("the red house");
  const Ids prompt = enc("the blue house");
  Ids out;
  EXPECT_EQ(ringlm::engine::respell_like_cache(tok(), cached, prompt, out), 0u);
  EXPECT_TRUE(out.empty());
}

TEST(TokenRespelling, AControlTokenIsNeverTradedForItsText) {
  // The cache holds the control token <turn|> (106); the prompt spells the same characters
  // as typed text. Equal bytes, different meaning: no respelling.
  const Ids head = enc("hello");
  const Ids cached = cat(head, Ids{106});
  ringlm::EncodeOptions as_text;
  as_text.parse_special = false;
  const Ids prompt = cat(head, tok().encode("<turn|>", as_text));
  ASSERT_NE(prompt.back(), 106);
  Ids out;
  EXPECT_EQ(ringlm::engine::respell_like_cache(tok(), cached, prompt, out), 0u);
}

}  // namespace
