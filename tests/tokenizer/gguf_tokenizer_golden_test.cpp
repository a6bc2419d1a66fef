// The real Gemma 4 tokenizer converted to GGUF metadata (gguf_tokenizer_from_hf: tokens,
// llama.cpp token types, "a b" merges, special ids, chat template), written, read back and
// built by load_gguf_tokenizer must reproduce golden.jsonl and decode each text back.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/gguf_tokenizer.h"
#include "io/gguf_writer.h"
#include "tokenizer/gguf_tokenizer_loader.h"
#include "util/error.h"

using namespace ringlm;
using nlohmann::json;

namespace {

const std::filesystem::path kTokDir = std::filesystem::path(RINGLM_TOKENIZER_DIR);


}  // namespace

TEST(GgufTokenizerGolden, ReproducesGoldenIds) {
  const auto data = gguf_tokenizer_from_hf(kTokDir);
  EXPECT_EQ(data.token_types[3], static_cast<std::int32_t>(io::GgufTokenType::Unknown));
  EXPECT_EQ(data.token_types[106], static_cast<std::int32_t>(io::GgufTokenType::Control));
  EXPECT_EQ(data.token_types[4], static_cast<std::int32_t>(io::GgufTokenType::UserDefined));  // <mask>
  EXPECT_FALSE(data.chat_template.empty());
  io::GgufWriter w;
  w.add_string("general.architecture", "gemma4");
  io::gguf_write_tokenizer(w, data);
  const auto dir = std::filesystem::temp_directory_path() / ("ringlm-gguf-tok-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "tokenizer.gguf";
  w.write(path);

  const Tokenizer gguf = load_tokenizer_any(path);  // detects GGUF by magic
  EXPECT_EQ(gguf.vocab_size(), 262144);
  EXPECT_EQ(gguf.bos_id(), 2);
  const auto eos = gguf.eos_ids();
  EXPECT_NE(std::find(eos.begin(), eos.end(), 1), eos.end());
  EXPECT_NE(std::find(eos.begin(), eos.end(), 106), eos.end());
  EXPECT_TRUE(gguf.is_special(106));
  EXPECT_FALSE(gguf.is_special(4));  // <mask>: a non-special added token, as in tokenizer.json
  EXPECT_EQ(gguf.find("<mask>"), 4);

  std::ifstream golden(std::string(RINGLM_TEST_DATA_DIR) + "/tokenizer/golden.jsonl");
  std::string line;
  int cases = 0;
  while (std::getline(golden, line)) {
    if (line.empty()) continue;
    const json g = json::parse(line);
    const auto text = g["text"].get<std::string>();
    const auto expected = g["ids"].get<std::vector<std::int32_t>>();
    const auto ids = gguf.encode(text, EncodeOptions{.add_bos = false});
    EXPECT_EQ(ids, expected) << "text: " << g["text"].dump();
    EXPECT_EQ(gguf.decode(ids), text) << "text: " << g["text"].dump();  // every golden text round-trips
    ++cases;
  }
  EXPECT_GT(cases, 20);
  std::filesystem::remove_all(dir);
}

TEST(GgufTokenizerGolden, RefusesOtherModels) {
  io::GgufTokenizerData d;
  d.model = "llama";
  d.tokens = {"a"};
  try {
    tokenizer_parts_from_gguf(d, "x.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.gguf: tokenizer.ggml.model is 'llama'"), std::string::npos);
  }
}
