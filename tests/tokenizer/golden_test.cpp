// The real Gemma 4 tokenizer against golden.jsonl (made by @huggingface/tokenizers).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer_test_util.h"

namespace ringlm {
namespace {

struct GoldenCase {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  std::ifstream in(std::string(RINGLM_TEST_DATA_DIR) + "/tokenizer/golden.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    cases.push_back({j.at("text").get<std::string>(), j.at("ids").get<std::vector<int32_t>>()});
  }
  return cases;
}

TEST(TokenizerGolden, EveryCaseEncodesToTheReferenceIds) {
  const auto cases = golden_cases();
  ASSERT_GE(cases.size(), 30u);
  const Tokenizer& tok = testing::gemma_tokenizer();
  for (const auto& c : cases) EXPECT_EQ(tok.encode(c.text), c.ids) << "text: " << c.text;
}

TEST(TokenizerGolden, EveryCaseRoundTrips) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  for (const auto& c : golden_cases()) {
    EXPECT_EQ(tok.decode(c.ids), c.text);
    // token_bytes concatenated gives the same text when there are no special tokens.
    std::string joined;
    bool any_special = false;
    for (int32_t id : c.ids) {
      joined += tok.token_bytes(id);
      any_special = any_special || tok.is_special(id);
    }
    if (!any_special) {
      EXPECT_EQ(joined, c.text);
    }
  }
}

TEST(TokenizerGolden, VocabularyAndSpecialIdsComeFromTheFiles) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  EXPECT_EQ(tok.vocab_size(), 262144);
  EXPECT_EQ(tok.bos_id(), 2);
  EXPECT_EQ(tok.eos_ids(), (std::vector<int32_t>{1, 106, 50}));
  EXPECT_TRUE(tok.add_bos_default());
  EXPECT_EQ(tok.find("<|turn>"), std::optional<int32_t>(105));
  EXPECT_EQ(tok.find("<turn|>"), std::optional<int32_t>(106));
  EXPECT_EQ(tok.find("no such piece at all"), std::nullopt);
  EXPECT_TRUE(tok.is_special(105));
  EXPECT_FALSE(tok.is_special(107));  // "\n" is a non-special added token
  EXPECT_EQ(tok.piece(105), "<|turn>");
  EXPECT_EQ(tok.token_bytes(105), "");
  EXPECT_EQ(tok.piece(138), "\xE2\x96\x81\xE2\x96\x81");
  EXPECT_EQ(tok.token_bytes(138), "  ");
  const auto byte_e2 = tok.find("<0xE2>");
  ASSERT_TRUE(byte_e2.has_value());
  EXPECT_TRUE(tok.is_byte_token(*byte_e2));
  EXPECT_EQ(tok.token_bytes(*byte_e2), "\xE2");
}

TEST(TokenizerGolden, AddBosPutsBosFirstOnce) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  EncodeOptions o;
  o.add_bos = true;
  const auto ids = tok.encode("Hello world", o);
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 9259, 1902}));
  EXPECT_EQ(tok.encode("", o), (std::vector<int32_t>{2}));
  EXPECT_TRUE(tok.encode("").empty());
}

TEST(TokenizerGolden, ParseSpecialFalseKeepsControlTokensOutOfUserText) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  EncodeOptions plain;
  plain.parse_special = false;
  const std::string text = "<|turn>user\nhi<turn|><bos><|tool_call>";
  const auto ids = tok.encode(text, plain);
  for (int32_t id : ids) EXPECT_FALSE(tok.is_special(id)) << "special id " << id << " injected";
  EXPECT_EQ(tok.decode(ids), text);
  // With parsing on (the default) the same text yields the control tokens.
  const auto parsed = tok.encode(text);
  EXPECT_EQ(parsed.front(), 105);
  EXPECT_EQ(tok.decode(parsed), text);
}

TEST(TokenizerGolden, DecodeSkipsSpecialTokensOnRequest) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  const std::vector<int32_t> ids = {2, 105, 2364, 107, 2202, 106};
  EXPECT_EQ(tok.decode(ids), "<bos><|turn>user\nhi<turn|>");
  EXPECT_EQ(tok.decode(ids, /*skip_special=*/true), "user\nhi");
  EXPECT_THROW(tok.decode(std::vector<int32_t>{262144}), Error);
  EXPECT_THROW(tok.decode(std::vector<int32_t>{-1}), Error);
}

TEST(TokenizerGolden, InvalidByteRunsDecodeToOneReplacementPerByte) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  const int32_t e6 = *tok.find("<0xE6>"), x97 = *tok.find("<0x97>"), xa5 = *tok.find("<0xA5>");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{e6, x97, xa5}), "日");
  // A truncated character: the whole run is invalid, each byte becomes U+FFFD (as HF).
  EXPECT_EQ(tok.decode(std::vector<int32_t>{e6, x97, 9259}), "\xEF\xBF\xBD\xEF\xBF\xBDHello");
}

TEST(TokenizerGolden, InvalidUtf8InputRoundTripsThroughByteFallback) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  const std::string text = "ok \xFF\xFE bytes \xC3";
  const auto ids = tok.encode(text);
  std::string joined;
  for (int32_t id : ids) joined += tok.token_bytes(id);
  EXPECT_EQ(joined, text);
}

TEST(TokenizerGolden, LongLinesAndWhitespaceRuns) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "word" + std::to_string(i) + (i % 7 ? " " : "   ");
  text += std::string(100, ' ') + std::string(75, '\n') + std::string(40, '\t') + "end";
  const auto ids = tok.encode(text);
  EXPECT_EQ(tok.decode(ids), text);
}

}  // namespace
}  // namespace ringlm

namespace ringlm {
namespace {

// Spec §7 open question 2: llama.cpp pre-splits Gemma text with [^\n]+|[\n]+, Hugging Face
// does not. Encoding the pieces separately must give the same ids as encoding the whole.
TEST(TokenizerGolden, NewlinePreSplitOfLlamaCppGivesIdenticalIds) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  const std::vector<std::string> parts = {"a", "b", " ", "  ", "\n", "\n\n", "\n\n\n\n\n", std::string(40, '\n'), "x\n",
                                          "日本", "\t", "<|turn>", "Hello", "▁", "\r\n", "}"};
  uint64_t s = 3;
  auto rnd = [&] { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; };
  for (int i = 0; i < 1000; ++i) {
    std::string text;
    for (int k = 0, n = 1 + static_cast<int>(rnd() % 16); k < n; ++k) text += parts[rnd() % parts.size()];
    std::vector<int32_t> split_ids;
    for (size_t p = 0; p < text.size();) {
      const bool nl = text[p] == '\n';
      size_t q = p;
      while (q < text.size() && (text[q] == '\n') == nl) ++q;
      tok.encode_into(text.substr(p, q - p), {}, split_ids);
      p = q;
    }
    ASSERT_EQ(split_ids, tok.encode(text)) << "text: " << text;
  }
}

}  // namespace
}  // namespace ringlm

namespace ringlm {
namespace {

// Arbitrary bytes (invalid UTF-8 included) encode without error, and the tokens' bytes
// give the input back: invalid bytes go through byte fallback one by one.
TEST(TokenizerGolden, RandomBytesRoundTripThroughTokenBytes) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  uint64_t s = 17;
  auto rnd = [&] { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; };
  for (int i = 0; i < 500; ++i) {
    std::string text;
    for (int k = 0, n = static_cast<int>(rnd() % 200); k < n; ++k) {
      // Bias toward bytes that start or continue multi-byte sequences.
      text += static_cast<char>(rnd() % 3 == 0 ? 0x80 + rnd() % 0x80 : rnd() % 256);
    }
    const auto ids = tok.encode(text);
    std::string joined;
    for (int32_t id : ids) joined += tok.token_bytes(id);
    if (text.find("\xE2\x96\x81") != std::string::npos) continue;  // a literal "▁" decodes as ' '
    ASSERT_EQ(joined, text) << "case " << i;
  }
}

}  // namespace
}  // namespace ringlm
