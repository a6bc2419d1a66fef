// The real Gemma 4 tokenizer written into GGUF metadata (as llama.cpp's converter stores
// it: tokens, token types, "a b" merges, special ids, chat template) and read back through
// load_gguf_tokenizer must reproduce golden.jsonl and agree with the tokenizer.json path.
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

const std::filesystem::path kTokDir = std::filesystem::path(RINGLM_SHARED_DIR) / "gemma4-tokenizer";

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// tokenizer.json -> GGUF tokenizer metadata, with llama.cpp's token types.
io::GgufTokenizerData gguf_data_from_tokenizer_json() {
  const json t = json::parse(slurp(kTokDir / "tokenizer.json"));
  io::GgufTokenizerData d;
  d.model = "gemma4";
  const auto& vocab = t["model"]["vocab"];
  std::int32_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) max_id = std::max(max_id, it.value().get<std::int32_t>());
  d.tokens.resize(static_cast<std::size_t>(max_id + 1));
  d.token_types.assign(d.tokens.size(), static_cast<std::int32_t>(io::GgufTokenType::Normal));
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const auto id = static_cast<std::size_t>(it.value().get<std::int32_t>());
    d.tokens[id] = it.key();
    if (it.key().size() == 6 && it.key().rfind("<0x", 0) == 0 && it.key().back() == '>')
      d.token_types[id] = static_cast<std::int32_t>(io::GgufTokenType::Byte);
  }
  for (const auto& a : t["added_tokens"]) {
    const auto id = a["id"].get<std::size_t>();
    EXPECT_EQ(d.tokens.at(id), a["content"].get<std::string>());
    const bool special = a["special"].get<bool>();
    d.token_types[id] = static_cast<std::int32_t>(
        a["content"] == "<unk>" ? io::GgufTokenType::Unknown
                                : special ? io::GgufTokenType::Control : io::GgufTokenType::UserDefined);
  }
  d.scores.assign(d.tokens.size(), 0.0f);
  for (const auto& m : t["model"]["merges"]) {
    const std::string a = m.is_array() ? m[0].get<std::string>() : m.get<std::string>().substr(0, m.get<std::string>().find(' '));
    const std::string b = m.is_array() ? m[1].get<std::string>() : m.get<std::string>().substr(m.get<std::string>().find(' ') + 1);
    // "a b" is only unambiguous if no piece holds a space.
    EXPECT_EQ(a.find(' '), std::string::npos);
    EXPECT_EQ(b.find(' '), std::string::npos);
    d.merges.push_back(a + " " + b);
  }
  d.bos_id = 2;
  d.eos_id = 1;
  d.unk_id = 3;
  d.pad_id = 0;
  d.add_bos = true;
  d.chat_template = slurp(kTokDir / "chat_template.jinja");
  return d;
}

}  // namespace

TEST(GgufTokenizerGolden, ReproducesGoldenIds) {
  const auto data = gguf_data_from_tokenizer_json();
  io::GgufWriter w;
  w.add_string("general.architecture", "gemma4");
  io::gguf_write_tokenizer(w, data);
  const auto dir = std::filesystem::temp_directory_path() / ("ringlm-gguf-tok-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "tokenizer.gguf";
  w.write(path);

  const Tokenizer gguf = load_gguf_tokenizer(path);
  const Tokenizer hf = Tokenizer::load(kTokDir);
  EXPECT_EQ(gguf.vocab_size(), hf.vocab_size());
  EXPECT_EQ(gguf.bos_id(), 2);
  const auto eos = gguf.eos_ids();
  EXPECT_NE(std::find(eos.begin(), eos.end(), 1), eos.end());
  EXPECT_NE(std::find(eos.begin(), eos.end(), 106), eos.end());
  EXPECT_TRUE(gguf.is_special(106));
  EXPECT_EQ(gguf.is_special(4), hf.is_special(4));

  std::ifstream golden(kTokDir / "golden.jsonl");
  std::string line;
  int cases = 0;
  while (std::getline(golden, line)) {
    if (line.empty()) continue;
    const json g = json::parse(line);
    const auto text = g["text"].get<std::string>();
    const auto expected = g["ids"].get<std::vector<std::int32_t>>();
    const auto ids = gguf.encode(text, EncodeOptions{.add_bos = false});
    EXPECT_EQ(ids, expected) << "text: " << g["text"].dump();
    EXPECT_EQ(gguf.decode(ids), hf.decode(ids)) << "text: " << g["text"].dump();
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
