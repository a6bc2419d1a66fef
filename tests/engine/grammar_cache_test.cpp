// The engine's compiled-schema cache: bounded by EngineOptions::grammar_cache, a dropped schema
// is compiled again on its next request and gives the same masks.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "engine/engine.h"
#include "model/testing/test_checkpoint.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ringlm;

namespace {

fs::path model_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("ringlm_grammar_cache_test_" + std::to_string(::getpid()));
    model::testing::TestCheckpointOptions o;
    o.preset = "tiny";
    o.seed = 5;
    o.tokenizer_dir = fs::path(RINGLM_TOKENIZER_DIR);
    model::testing::write_test_checkpoint(d, o);
    return d;
  }();
  return dir;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("ringlm_grammar_cache_test_" + std::to_string(::getpid())), ec);
  }
} cleanup;

std::vector<std::vector<uint32_t>> masks_for(const std::shared_ptr<guided::GrammarIndex>& idx, const std::string& text,
                                             const Tokenizer& tok) {
  guided::Matcher m(idx);
  std::vector<uint32_t> mask(idx->vocab().mask_words());
  std::vector<std::vector<uint32_t>> out;
  EncodeOptions eo;
  eo.add_bos = false;
  eo.parse_special = false;
  for (int32_t id : tok.encode(text, eo)) {
    m.fill_mask(mask.data());
    out.push_back(mask);
    EXPECT_TRUE(m.accept(uint32_t(id))) << "token " << id;
  }
  EXPECT_TRUE(m.is_accepting());
  return out;
}

TEST(EngineGrammarCache, BoundedAndRebuiltIdentically) {
  engine::EngineOptions opt{.model_dir = model_dir()};
  opt.grammar_cache.max_entries = 1;
  opt.grammar_index.mask_cache_bytes = 1;  // keeps only the mask just computed
  engine::Engine e(opt);
  const std::string a = R"({"type":"object","properties":{"n":{"enum":["x","yy"]}},"required":["n"]})";
  const std::string b = R"({"type":"array","items":{"type":"integer"},"maxItems":2})";
  auto ia = e.grammar_for_schema(a);
  EXPECT_EQ(e.grammar_for_schema(a), ia);
  auto masks = masks_for(ia, R"({"n":"yy"})", e.tokenizer());
  EXPECT_EQ(ia->stats().masks_cached, 1u);
  EXPECT_GT(ia->stats().mask_evictions, 0u);
  auto ib = e.grammar_for_schema(b);  // only one schema fits: a is dropped
  auto st = e.grammar_cache_stats();
  EXPECT_EQ(st.entries, 1u);
  EXPECT_EQ(st.evictions, 1u);
  auto ia2 = e.grammar_for_schema(a);  // compiled again
  EXPECT_NE(ia2, ia);
  EXPECT_EQ(masks_for(ia2, R"({"n":"yy"})", e.tokenizer()), masks);
  EXPECT_EQ(masks_for(ia, R"({"n":"yy"})", e.tokenizer()), masks);  // the old holder still works
  EXPECT_THROW(e.grammar_for_schema("{not json"), Error);
  EXPECT_EQ(e.grammar_cache_stats().entries, 1u);
}

}  // namespace
