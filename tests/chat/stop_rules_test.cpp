// Stop ids from model config files, and the streaming stop-string matcher checked against a
// naive whole-prefix search on random text split at random token boundaries.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "chat/stop_rules.h"
#include "util/error.h"

using ringlm::chat::StopIds;
using ringlm::chat::StopStringMatcher;
namespace fs = std::filesystem;

namespace {

fs::path scratch_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ringlm_stop_rules_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST(StopIds, GemmaTokenizerDirectory) {
  auto ids = StopIds::load(std::string(RINGLM_TOKENIZER_DIR));
  EXPECT_EQ(ids.ids, (std::vector<std::int32_t>{1, 50, 106}));
  EXPECT_TRUE(ids.contains(106));
  EXPECT_FALSE(ids.contains(2));
}

TEST(StopIds, UnionOfGenerationConfigAndNestedTextConfig) {
  auto dir = scratch_dir("union");
  write(dir / "generation_config.json", R"({"eos_token_id": 106})");
  write(dir / "config.json", R"({"eos_token_id": [1, 106], "text_config": {"eos_token_id": 50}})");
  EXPECT_EQ(StopIds::load(dir).ids, (std::vector<std::int32_t>{1, 50, 106}));
  fs::remove(dir / "generation_config.json");
  EXPECT_EQ(StopIds::load(dir).ids, (std::vector<std::int32_t>{1, 50, 106}));
  fs::remove(dir / "config.json");
  EXPECT_TRUE(StopIds::load(dir).ids.empty());
  fs::remove_all(dir);
}

TEST(StopIds, BadFilesGiveClearErrors) {
  auto dir = scratch_dir("bad");
  write(dir / "generation_config.json", R"({"eos_token_id": "1"})");
  try {
    StopIds::load(dir);
    FAIL() << "accepted a string id";
  } catch (const ringlm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("generation_config.json: eos_token_id"), std::string::npos) << e.what();
  }
  write(dir / "generation_config.json", R"({"eos_token_id": [1, )");
  try {
    StopIds::load(dir);
    FAIL() << "accepted invalid JSON";
  } catch (const ringlm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid JSON"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(StopStringMatcher, HoldsBackPartialMatchesAcrossPieces) {
  StopStringMatcher m({"</answer>", "STOP"});
  std::string out;
  m.push("The result is 4</ans", out);
  EXPECT_EQ(out, "The result is 4");
  m.push("wer> trailing", out);
  EXPECT_EQ(out, "The result is 4");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "</answer>");
  m.push("more", out);
  EXPECT_EQ(out, "The result is 4");
}

TEST(StopStringMatcher, FalseStartIsReleased) {
  StopStringMatcher m({"STOP"});
  std::string out;
  m.push("ST", out);
  EXPECT_EQ(out, "");
  m.push("ART", out);
  EXPECT_EQ(out, "START");
  m.push("ST", out);
  m.flush(out);
  EXPECT_EQ(out, "STARTST");
  EXPECT_FALSE(m.stopped());
}

TEST(StopStringMatcher, NoStopStringsPassesEverythingThrough) {
  StopStringMatcher m({"", ""});
  std::string out;
  m.push("abc", out);
  EXPECT_EQ(out, "abc");
  EXPECT_TRUE(m.empty());
}

// Property: for random text cut into random pieces, the matcher emits exactly the text before
// the first stop string that is complete at a piece boundary (earliest start among those),
// never emits a byte past that point, and holds back less than the longest stop string.
TEST(StopStringMatcher, MatchesNaivePrefixSearchOnRandomStreams) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab<>/\xc3\xa9 ";
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<std::string> stops;
    int nstops = 1 + static_cast<int>(rng() % 3);
    std::size_t longest = 0;
    for (int i = 0; i < nstops; ++i) {
      std::string s;
      int len = 1 + static_cast<int>(rng() % 5);
      for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
      longest = std::max(longest, s.size());
      stops.push_back(s);
    }
    std::string text;
    int tlen = static_cast<int>(rng() % 40);
    for (int k = 0; k < tlen; ++k) text += alphabet[rng() % alphabet.size()];

    StopStringMatcher m(stops);
    std::string out;
    std::size_t consumed = 0;
    std::size_t expected_cut = std::string::npos;
    while (consumed < text.size() && expected_cut == std::string::npos) {
      std::size_t n = 1 + rng() % 6;
      n = std::min(n, text.size() - consumed);
      m.push(std::string_view(text).substr(consumed, n), out);
      consumed += n;
      std::string prefix = text.substr(0, consumed);
      for (const auto& s : stops) expected_cut = std::min(expected_cut, prefix.find(s));
      if (expected_cut == std::string::npos) {
        ASSERT_FALSE(m.stopped());
        ASSERT_EQ(out, prefix.substr(0, out.size())) << "emitted text that was not generated";
        ASSERT_LT(prefix.size() - out.size(), longest) << "held back too much";
      }
    }
    if (expected_cut == std::string::npos) {
      m.flush(out);
      ASSERT_EQ(out, text);
    } else {
      ASSERT_TRUE(m.stopped());
      ASSERT_EQ(out, text.substr(0, expected_cut)) << "text=" << text;
    }
  }
}
