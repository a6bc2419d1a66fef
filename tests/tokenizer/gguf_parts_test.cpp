// parts_from_gguf: GGUF-style metadata built from the Gemma tokenizer.json (tokens by id,
// types from the added-token flags, merges as "a b") must reproduce the golden ids.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/gguf_parts.h"
#include "tokenizer/hf_json_loader.h"
#include "tokenizer_test_util.h"

namespace ringlm {
namespace {

TEST(TokenizerGguf, GemmaMetadataReproducesTheGoldenIds) {
  // What a GGUF converter writes for Gemma, derived here from the Hugging Face files.
  const TokenizerParts hf = load_hf_tokenizer_parts(testing::gemma_tokenizer_dir());
  auto storage = std::make_shared<std::vector<std::string>>();
  GgufTokenizerMetadata meta;
  meta.model = "gemma4";
  meta.tokens.resize(262144);
  meta.token_types.assign(262144, static_cast<int32_t>(GgufTokenType::kNormal));
  for (const auto& [piece, id] : hf.vocab) {
    meta.tokens[id] = piece;
    if (piece.size() == 6 && piece.substr(0, 3) == "<0x") meta.token_types[id] = static_cast<int32_t>(GgufTokenType::kByte);
  }
  for (const AddedToken& t : hf.added_tokens) {
    meta.token_types[t.id] = static_cast<int32_t>(t.special ? GgufTokenType::kControl : GgufTokenType::kUserDefined);
  }
  storage->reserve(hf.merges.size());
  for (const auto& [a, b] : hf.merges) {
    storage->push_back(std::string(a) + " " + std::string(b));
    meta.merges.push_back(storage->back());
  }
  meta.storage = storage;
  meta.bos_id = 2;
  meta.eos_id = 1;
  meta.extra_eos_ids = {106, 50};
  meta.unknown_id = 3;
  meta.add_bos = true;
  const Tokenizer tok = Tokenizer::from_parts(parts_from_gguf(meta));

  EXPECT_EQ(tok.bos_id(), 2);
  EXPECT_EQ(tok.eos_ids(), (std::vector<int32_t>{1, 106, 50}));
  EXPECT_TRUE(tok.is_special(105));
  std::ifstream in(std::string(RINGLM_TEST_DATA_DIR) + "/tokenizer/golden.jsonl");
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    const std::string text = j.at("text");
    EXPECT_EQ(tok.encode(text), j.at("ids").get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(tok.decode(tok.encode(text)), text);
    ++cases;
  }
  EXPECT_GE(cases, 30);
}

TEST(TokenizerGguf, BadMetadataIsNamed) {
  GgufTokenizerMetadata meta;
  meta.model = "gpt2";
  meta.tokens = {"a"};
  EXPECT_THAT([&] { try { parts_from_gguf(meta); } catch (const Error& e) { return std::string(e.what()); } return std::string(); }(),
              ::testing::HasSubstr("tokenizer.ggml.model 'gpt2' is not supported"));
  meta.model = "llama";
  meta.bos_id = 7;
  EXPECT_THROW(parts_from_gguf(meta), Error);
  meta.bos_id.reset();
  meta.merges = {"ab"};
  EXPECT_THROW(parts_from_gguf(meta), Error);
}

TEST(TokenizerGguf, LlamaStyleSpacePrefix) {
  GgufTokenizerMetadata meta;
  meta.model = "llama";
  meta.tokens = {"<unk>", "<s>", "\xE2\x96\x81", "H", "i", "\xE2\x96\x81H", "\xE2\x96\x81Hi"};
  meta.token_types = {2, 3, 1, 1, 1, 1, 1};
  meta.merges = {"\xE2\x96\x81 H", "\xE2\x96\x81H i"};
  meta.bos_id = 1;
  meta.add_space_prefix = true;
  const Tokenizer tok = Tokenizer::from_parts(parts_from_gguf(meta));
  EXPECT_EQ(tok.encode("Hi Hi"), (std::vector<int32_t>{6, 6}));
  EXPECT_EQ(tok.decode(tok.encode("Hi Hi")), "Hi Hi");
  EXPECT_EQ(tok.encode("Hi<s>", {.add_bos = true}), (std::vector<int32_t>{1, 6, 1}));
}

}  // namespace
}  // namespace ringlm
