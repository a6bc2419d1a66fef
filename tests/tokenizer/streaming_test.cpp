// The streaming detokenizer: never a partial UTF-8 character, same text as decode().
#include <gtest/gtest.h>

#include "util/utf8.h"
#include "tokenizer_test_util.h"

namespace ringlm {
namespace {

using Ids = std::vector<int32_t>;

int32_t byte_token(const Tokenizer& tok, unsigned b) {
  char name[8];
  std::snprintf(name, sizeof name, "<0x%02X>", b);
  return *tok.find(name);
}

TEST(TokenizerStreaming, CharacterSplitAcrossByteTokensIsHeldUntilComplete) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  StreamingDecoder sd(tok);
  // U+13000 EGYPTIAN HIEROGLYPH A001 = F0 93 80 80: four byte-fallback tokens.
  const Ids ids = tok.encode("\xF0\x93\x80\x80");
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(sd.push(ids[0]), "");
  EXPECT_EQ(sd.push(ids[1]), "");
  EXPECT_EQ(sd.push(ids[2]), "");
  EXPECT_EQ(sd.push(ids[3]), "\xF0\x93\x80\x80");
  EXPECT_EQ(sd.flush(), "");
}

TEST(TokenizerStreaming, OrdinaryTokensPassStraightThrough) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  StreamingDecoder sd(tok);
  EXPECT_EQ(sd.push(9259), "Hello");
  EXPECT_EQ(sd.push(1902), " world");
  EXPECT_EQ(sd.push(105), "<|turn>");
  StreamingDecoder skipping(tok, /*skip_special=*/true);
  EXPECT_EQ(skipping.push(105), "");
  EXPECT_EQ(skipping.push(9259), "Hello");
}

TEST(TokenizerStreaming, IncompleteCharacterBecomesReplacementCharacters) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  {
    StreamingDecoder sd(tok);
    EXPECT_EQ(sd.push(byte_token(tok, 0xE6)), "");
    EXPECT_EQ(sd.push(byte_token(tok, 0x97)), "");
    EXPECT_EQ(sd.push(9259), "\xEF\xBF\xBD\xEF\xBF\xBDHello");  // like decode(): one U+FFFD per byte
    EXPECT_EQ(tok.decode(Ids{byte_token(tok, 0xE6), byte_token(tok, 0x97), 9259}), "\xEF\xBF\xBD\xEF\xBF\xBDHello");
  }
  {
    StreamingDecoder sd(tok);
    EXPECT_EQ(sd.push(byte_token(tok, 0xF0)), "");
    EXPECT_EQ(sd.flush(), "\xEF\xBF\xBD");
    EXPECT_EQ(sd.push(byte_token(tok, 0x41)), "A");  // the decoder is usable after flush
  }
  {
    StreamingDecoder sd(tok);
    EXPECT_EQ(sd.push(byte_token(tok, 0x80)), "\xEF\xBF\xBD");  // can never start a character
  }
}

TEST(TokenizerStreaming, RandomStreamsAreValidUtf8AndMatchDecode) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  const std::vector<std::string> parts = {"日本語", "\xF0\x93\x80\x80", "👋🏽", "é", "Hello", " ", "\n", "<|turn>",
                                          "\xF0\x9F\xA6\x9C", "\xE2\x88\x91", "𝕄", "x"};
  uint64_t s = 7;
  auto rnd = [&] { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; };
  for (int i = 0; i < 500; ++i) {
    std::string text;
    for (int k = 0, n = 1 + static_cast<int>(rnd() % 12); k < n; ++k) text += parts[rnd() % parts.size()];
    const Ids ids = tok.encode(text);
    StreamingDecoder sd(tok);
    std::string streamed;
    for (int32_t id : ids) {
      const std::string piece = sd.push(id);
      ASSERT_TRUE(utf8::is_valid(piece)) << "partial character emitted for " << text;
      streamed += piece;
    }
    streamed += sd.flush();
    EXPECT_EQ(streamed, tok.decode(ids));
    EXPECT_EQ(streamed, text);
  }
  // Arbitrary byte-token soup: every piece is still valid UTF-8.
  for (int i = 0; i < 200; ++i) {
    StreamingDecoder sd(tok);
    for (int k = 0; k < 20; ++k) {
      const int32_t id = rnd() % 5 == 0 ? 9259 : byte_token(tok, static_cast<unsigned>(0x80 + rnd() % 0x78));
      ASSERT_TRUE(utf8::is_valid(sd.push(id)));
    }
    ASSERT_TRUE(utf8::is_valid(sd.flush()));
  }
}

TEST(TokenizerStreaming, OutOfRangeIdThrows) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  StreamingDecoder sd(tok);
  EXPECT_THROW(sd.push(tok.vocab_size()), Error);
}

}  // namespace
}  // namespace ringlm
