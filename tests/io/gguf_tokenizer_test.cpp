// Tokenizer metadata in GGUF: written and read back; inconsistent metadata is refused.
#include <gtest/gtest.h>

#include "io/gguf_reader.h"
#include "io/gguf_tokenizer.h"
#include "io/gguf_writer.h"
#include "util/error.h"

using namespace ringlm;
using namespace ringlm::io;

namespace {

GgufTokenizerData sample() {
  GgufTokenizerData d;
  d.model = "gemma4";
  d.tokens = {"<pad>", "<eos>", "<bos>", "<unk>", "a", "b", "ab", "\xe2\x96\x81"};
  d.scores = {0, 0, 0, 0, -1, -2, -3, -4};
  d.token_types = {3, 3, 3, 2, 1, 1, 1, 4};
  d.merges = {"a b"};
  d.bos_id = 2;
  d.eos_id = 1;
  d.unk_id = 3;
  d.pad_id = 0;
  d.add_bos = true;
  d.chat_template = "{{ bos_token }}";
  return d;
}

std::string read_error(const std::vector<std::uint8_t>& b) {
  try {
    auto f = GgufFile::from_memory(b.data(), b.size(), "tok.gguf");
    gguf_tokenizer_data(*f);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(GgufTokenizer, RoundTrip) {
  GgufWriter w;
  gguf_write_tokenizer(w, sample());
  const auto b = w.bytes();
  auto f = GgufFile::from_memory(b.data(), b.size(), "tok.gguf");
  const auto d = gguf_tokenizer_data(*f);
  const auto s = sample();
  EXPECT_EQ(d.model, s.model);
  EXPECT_EQ(d.tokens, s.tokens);
  EXPECT_EQ(d.scores, s.scores);
  EXPECT_EQ(d.token_types, s.token_types);
  EXPECT_EQ(d.merges, s.merges);
  EXPECT_EQ(d.bos_id, 2);
  EXPECT_EQ(d.eos_id, 1);
  EXPECT_EQ(d.unk_id, 3);
  EXPECT_EQ(d.pad_id, 0);
  EXPECT_TRUE(d.add_bos);
  EXPECT_FALSE(d.add_eos);
  EXPECT_EQ(d.chat_template, s.chat_template);
}

TEST(GgufTokenizer, InconsistentMetadataIsRefused) {
  {
    auto s = sample();
    s.scores.pop_back();
    GgufWriter w;
    gguf_write_tokenizer(w, s);
    EXPECT_NE(read_error(w.bytes()).find("'tokenizer.ggml.scores' has 7 entries for 8 tokens"), std::string::npos);
  }
  {
    auto s = sample();
    s.bos_id = 8;
    GgufWriter w;
    gguf_write_tokenizer(w, s);
    EXPECT_NE(read_error(w.bytes()).find("'tokenizer.ggml.bos_token_id' is 8, not a token id"), std::string::npos);
  }
  {
    auto s = sample();
    s.token_types[0] = 9;
    GgufWriter w;
    gguf_write_tokenizer(w, s);
    EXPECT_NE(read_error(w.bytes()).find("unknown token type 9"), std::string::npos);
  }
  {
    GgufWriter w;
    w.add_string("tokenizer.ggml.model", "gemma4");
    w.add_u32("tokenizer.ggml.tokens", 5);
    EXPECT_NE(read_error(w.bytes()).find("'tokenizer.ggml.tokens' has type u32, expected array"), std::string::npos);
  }
}
