// Bad tokenizer files give one clear ringlm::Error naming the field, never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tokenizer/hf_json_loader.h"
#include "tokenizer_test_util.h"

namespace ringlm {
namespace {

using ::testing::HasSubstr;

// A tiny valid tokenizer.json with `model_extra` spliced into the model object and `top`
// spliced into the top-level object.
std::string tiny_json(const std::string& model_body, const std::string& top = "") {
  return std::string("{") + top + R"("model": {)" + model_body + "}}";
}
const char* kGoodModel = R"("type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"])";

std::string error_of(const std::string& json) {
  try {
    Tokenizer::from_parts(parse_hf_tokenizer_json(json, "t.json"));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenizerMalformed, TheTinyBaseFileIsValid) {
  const auto tok = Tokenizer::from_parts(parse_hf_tokenizer_json(tiny_json(kGoodModel), "t.json"));
  EXPECT_EQ(tok.encode("abab"), (std::vector<int32_t>{2, 2}));
}

TEST(TokenizerMalformed, BadJson) {
  EXPECT_THAT(error_of("{\"model\": {"), HasSubstr("t.json: invalid JSON"));
  EXPECT_THAT(error_of(""), HasSubstr("invalid JSON"));
  EXPECT_THAT(error_of("[1, 2]"), HasSubstr("must be an object"));
}

TEST(TokenizerMalformed, UnknownModelType) {
  EXPECT_THAT(error_of(tiny_json(R"("type": "Unigram", "vocab": [])")), HasSubstr("model.type 'Unigram' is not supported"));
  EXPECT_THAT(error_of(R"({"other": 1})"), HasSubstr("t.json: model is missing"));
}

TEST(TokenizerMalformed, MissingOrBadVocab) {
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "merges": [])")), HasSubstr("model.vocab is missing"));
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": [1], "merges": [])")), HasSubstr("model.vocab must be an object"));
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": {"a": "x"}, "merges": [])")), HasSubstr("model.vocab[\"a\"]"));
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": {"a": -4}, "merges": [])")), HasSubstr("non-negative"));
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": {}, "merges": [])")), HasSubstr("model.vocab is empty"));
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": {"a": 99999999}, "merges": [])")), HasSubstr("invalid id"));
}

TEST(TokenizerMalformed, MergeNamingUnknownToken) {
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b", "a c"])")),
              HasSubstr("merges[1]: 'c' is not in the vocabulary"));
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]])")),
              HasSubstr("merges[0]: the merged piece 'ab' is not in the vocabulary"));
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": {"a": 0}, "merges": ["a b c"])")),
              HasSubstr("model.merges[0] must be two pieces separated by one space"));
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": {"a": 0}, "merges": [["a"]])")), HasSubstr("model.merges[0]"));
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": {"a": 0}, "merges": [[1, 2]])")),
              HasSubstr("model.merges[0] must hold two strings"));
}

TEST(TokenizerMalformed, UnsupportedPipelineStagesAreNamed) {
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("normalizer": {"type": "NFKC"},)")),
              HasSubstr("normalizer.type 'NFKC' is not a supported normalizer"));
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("normalizer": {"type": "Sequence", "normalizers": [{"type": "Lowercase"}]},)")),
              HasSubstr("normalizer.normalizers[0].type 'Lowercase'"));
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("pre_tokenizer": {"type": "ByteLevel"},)")),
              HasSubstr("pre_tokenizer.type 'ByteLevel' is not a supported pre-tokenizer"));
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated"},)")),
              HasSubstr("pre_tokenizer.pattern is a Regex"));
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways"},)")),
              HasSubstr("pre_tokenizer.behavior 'Sideways'"));
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("decoder": {"type": "WordPiece"},)")),
              HasSubstr("decoder.type 'WordPiece' is not a supported decoder"));
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("normalizer": {"kind": "Replace"},)")), HasSubstr("normalizer.type is missing"));
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1)")),
              HasSubstr("model.dropout is not supported"));
  EXPECT_THAT(error_of(tiny_json(R"("type": "BPE", "vocab": {"a": 0}, "merges": [], "continuing_subword_prefix": "##")")),
              HasSubstr("model.continuing_subword_prefix is not supported"));
}

TEST(TokenizerMalformed, NormalizersThatMultiplyTextAreRefused) {
  // One space becomes 100 KB: every request would be inflated a hundred-thousand-fold.
  const std::string huge(100000, 'x');
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": ")" +
                                                 huge + R"("},)")),
              HasSubstr("t.json: normalizer can make a text 100000 times longer (limit 16)"));
  // Steps multiply: 4 x 4 x 4 = 64.
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("normalizer": {"type": "Sequence", "normalizers": [)"
                                             R"({"type": "Replace", "pattern": {"String": "a"}, "content": "aaaa"},)"
                                             R"({"type": "Replace", "pattern": {"String": "a"}, "content": "aaaa"},)"
                                             R"({"type": "Replace", "pattern": {"String": "a"}, "content": "aaaa"}]},)")),
              HasSubstr("64 times longer"));
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("normalizer": {"type": "Prepend", "prepend": ")" + std::string(2000, 'p') +
                                                 R"("},)")),
              HasSubstr("prepends 2000 bytes"));
  // Gemma's own (a space becomes U+2581, 3 bytes) is fine.
  EXPECT_EQ(error_of(tiny_json(kGoodModel, R"("normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},)")),
            "(no error)");
}

TEST(TokenizerMalformed, BadAddedTokens) {
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("added_tokens": [{"content": "x"}],)")), HasSubstr("added_tokens[0].id is missing"));
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("added_tokens": [{"id": 5, "content": ""}],)")), HasSubstr("added_tokens[0].content is empty"));
  EXPECT_THAT(error_of(tiny_json(kGoodModel, R"("added_tokens": [{"id": 5, "content": "x", "special": "yes"}],)")),
              HasSubstr("added_tokens[0].special must be true or false"));
}

TEST(TokenizerMalformed, CharacterWithoutTokenNeedsUnkOrByteFallback) {
  const auto tok = Tokenizer::from_parts(parse_hf_tokenizer_json(tiny_json(kGoodModel), "t.json"));
  EXPECT_THROW(tok.encode("abz"), Error);
}

TEST(TokenizerMalformed, LoadFromFilesNamesThePath) {
  const auto dir = std::filesystem::temp_directory_path() / ("ringlm_tok_malformed_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  EXPECT_THAT([&] {
    try {
      Tokenizer::load(dir);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }(), HasSubstr("tokenizer.json: no such file"));
  std::ofstream(dir / "tokenizer.json") << "{not json";
  try {
    Tokenizer::load(dir);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr((dir / "tokenizer.json").string() + ": invalid JSON"));
  }
  std::ofstream(dir / "tokenizer.json") << tiny_json(R"("type": "BPE", "vocab": {"a": 0}, "merges": ["a q"])");
  try {
    Tokenizer::load(dir / "tokenizer.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("merges[0]: 'q' is not in the vocabulary"));
  }
  std::ofstream(dir / "tokenizer.json") << tiny_json(kGoodModel);
  std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token": "<nope>"})";
  try {
    Tokenizer::load(dir);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("tokenizer_config.json: bos_token names '<nope>'"));
  }
  std::filesystem::remove_all(dir);
}

// Random corruption of a small valid file: any outcome but a crash is fine.
TEST(TokenizerMalformed, RandomlyCorruptedFilesNeverCrash) {
  const std::string base = tiny_json(R"("type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "<0x41>": 3}, "merges": ["a b"], "byte_fallback": true)",
                                     R"("added_tokens": [{"id": 4, "content": "<x>", "special": true}], "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "a"}, "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]},)");
  uint64_t s = 12345;
  auto rnd = [&] { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; };
  int ok = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string j = base;
    for (int k = 0; k < 1 + static_cast<int>(rnd() % 3); ++k) {
      const size_t pos = rnd() % j.size();
      switch (rnd() % 3) {
        case 0: j[pos] = static_cast<char>(rnd() % 128); break;
        case 1: j.erase(pos, 1 + rnd() % 4); break;
        default: j.insert(pos, 1, "{}[]\",:0-9e"[rnd() % 11]); break;
      }
    }
    try {
      const auto tok = Tokenizer::from_parts(parse_hf_tokenizer_json(j, "t.json"));
      tok.decode(tok.encode("ab <x>A"));
      ++ok;
    } catch (const Error&) {
    }
  }
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace ringlm
