// Bounded caches: the per-grammar token-mask LRU (GrammarIndex) and the compiled-schema LRU
// (GrammarCache). Evicted masks and grammars are rebuilt transparently and give the same masks.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "guided/grammar_cache.h"
#include "test_vocab.h"

namespace ringlm::guided {
namespace {

using testing::index_for;
using testing::synthetic_vocab;

const Json kSchema = Json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
    "born": {"type": "string", "format": "date"}
  },
  "required": ["name", "age"],
  "additionalProperties": false
})");

const std::string kText = R"({"name":"Al é","age":42,"tags":["a","b"],"born":"2024-02-29"})";

std::shared_ptr<GrammarIndex> index_with_budget(size_t bytes) {
  GrammarIndexOptions opt;
  opt.mask_cache_bytes = bytes;
  return std::make_shared<GrammarIndex>(compile_schema(kSchema).grammar, synthetic_vocab(), opt);
}

// The mask at every position of kText (walked twice, so the second walk revisits masks).
std::vector<std::vector<uint32_t>> masks_along(const std::shared_ptr<GrammarIndex>& idx, int rounds = 2) {
  const Vocabulary& v = idx->vocab();
  auto toks = testing::greedy_tokenize(v, kText);
  std::vector<std::vector<uint32_t>> out;
  for (int r = 0; r < rounds; ++r) {
    Matcher m(idx);
    std::vector<uint32_t> mask(v.mask_words());
    for (uint32_t t : toks) {
      m.fill_mask(mask.data());
      out.push_back(mask);
      EXPECT_TRUE(m.accept(t));
    }
    m.fill_mask(mask.data());
    out.push_back(mask);
    EXPECT_TRUE(m.is_accepting());
  }
  return out;
}

TEST(MaskCache, UnboundedKeepsEveryMask) {
  auto idx = index_with_budget(size_t(1) << 30);
  masks_along(idx);
  auto st = idx->stats();
  EXPECT_EQ(st.mask_evictions, 0u);
  EXPECT_GT(st.masks_cached, 10u);
  // Dense masks take the vocabulary's words; sparse ones (few tokens allowed) at most an eighth.
  const size_t dense = idx->vocab().mask_words() * 4;
  EXPECT_LE(st.mask_bytes, (st.masks_cached - st.masks_sparse) * dense + st.masks_sparse * (dense / 8));
  EXPECT_GE(st.mask_bytes, (st.masks_cached - st.masks_sparse) * dense);
  EXPECT_GT(st.mask_hits, 0u);  // the second walk hits
  EXPECT_GE(idx->memory_bytes(), st.mask_bytes);
}

TEST(MaskCache, EvictionKeepsWithinBudgetAndMasksIdentical) {
  auto reference = masks_along(index_with_budget(size_t(1) << 30));
  const size_t one = synthetic_vocab()->mask_words() * 4;
  for (size_t keep : {size_t(0), size_t(1), size_t(2), size_t(5)}) {
    auto idx = index_with_budget(keep * one);
    auto got = masks_along(idx);
    EXPECT_EQ(got, reference) << "budget of " << keep << " masks";
    auto st = idx->stats();
    // Within the byte budget, except that the last mask is always kept.
    EXPECT_TRUE(st.mask_bytes <= keep * one || st.masks_cached == 1) << st.mask_bytes << " bytes in " << st.masks_cached;
    EXPECT_LE(st.mask_bytes, std::max<size_t>(keep, 1) * one);
    EXPECT_GT(st.mask_evictions, 0u);
    EXPECT_GT(st.mask_misses, reference.size() / 4);  // evicted masks were recomputed
  }
}

// A vocabulary large enough that most masks allow under an eighth of it: every byte, every
// one-to-three-letter lowercase word and every number below 10,000 (28,508 tokens).
std::shared_ptr<const Vocabulary> wide_vocab() {
  std::vector<std::string> toks;
  for (int b = 0; b < 256; ++b) toks.push_back(std::string(1, char(b)));
  for (char a = 'a'; a <= 'z'; ++a)
    for (char b = 'a'; b <= 'z'; ++b) {
      toks.push_back(std::string{a, b});
      for (char c = 'a'; c <= 'z'; ++c) toks.push_back(std::string{a, b, c});
    }
  for (int n = 10; n < 10000; ++n) toks.push_back(std::to_string(n));
  const uint32_t eos = uint32_t(toks.size());
  toks.push_back("<eos>");
  return std::make_shared<Vocabulary>(std::move(toks), std::vector<uint32_t>{eos});
}

// A mask that allows few tokens is kept as its id list: a schema of enums and small integers
// keeps masks far below the dense size, with the same bits as masks computed afresh.
TEST(MaskCache, FewAllowedTokensAreKeptAsIdLists) {
  const Json schema = Json::parse(R"({"type":"object","properties":{"k":{"enum":["red","green"]},
    "n":{"type":"integer","minimum":0,"maximum":9}},"required":["k","n"],"additionalProperties":false})");
  auto vocab = wide_vocab();
  auto idx = std::make_shared<GrammarIndex>(compile_schema(schema).grammar, vocab);
  GrammarIndexOptions none;
  none.mask_cache_bytes = 0;  // every mask recomputed: the reference bits
  auto fresh = std::make_shared<GrammarIndex>(compile_schema(schema).grammar, vocab, none);
  const std::string text = R"({"k":"green","n":7})";
  auto toks = testing::greedy_tokenize(*vocab, text);
  for (int round = 0; round < 2; ++round) {
    Matcher a(idx), b(fresh);
    std::vector<uint32_t> ma(vocab->mask_words()), mb(vocab->mask_words());
    for (uint32_t t : toks) {
      a.fill_mask(ma.data());
      b.fill_mask(mb.data());
      ASSERT_EQ(ma, mb);
      ASSERT_TRUE(a.accept(t));
      ASSERT_TRUE(b.accept(t));
    }
  }
  auto st = idx->stats();
  EXPECT_GT(st.masks_sparse, st.masks_cached / 2);
  EXPECT_LT(st.mask_bytes, st.masks_cached * vocab->mask_words() * 4 / 4);
  EXPECT_GT(st.mask_hits, 0u);  // the second round reads the id lists back
}

// Least recently used goes first: with room for two masks, alternating between two positions
// never misses after the first visit of each.
TEST(MaskCache, LeastRecentlyUsedIsEvicted) {
  const size_t one = synthetic_vocab()->mask_words() * 4;
  auto idx = index_with_budget(2 * one);
  Matcher m(idx);
  std::vector<uint32_t> mask(idx->vocab().mask_words());
  m.fill_mask(mask.data());                         // A (initial)
  ASSERT_TRUE(m.accept(uint32_t('{')));
  m.fill_mask(mask.data());                         // B
  auto before = idx->stats();
  EXPECT_EQ(before.mask_misses, 2u);
  for (int i = 0; i < 5; ++i) {
    m.rollback(1);
    m.fill_mask(mask.data());
    ASSERT_TRUE(m.accept(uint32_t('{')));
    m.fill_mask(mask.data());
  }
  EXPECT_EQ(idx->stats().mask_misses, 2u);
  ASSERT_TRUE(m.accept(uint32_t('"')));
  m.fill_mask(mask.data());                         // C evicts A (least recent)
  auto st = idx->stats();
  EXPECT_EQ(st.mask_misses, 3u);
  EXPECT_EQ(st.mask_evictions, 1u);
  m.rollback(1);
  m.fill_mask(mask.data());                         // B: still cached
  EXPECT_EQ(idx->stats().mask_misses, 3u);
  m.rollback(1);
  m.fill_mask(mask.data());                         // A: was evicted, recomputed
  EXPECT_EQ(idx->stats().mask_misses, 4u);
}

TEST(MaskCache, ThreadsWithTinyBudgetAgree) {
  auto reference = masks_along(index_with_budget(size_t(1) << 30));
  auto shared = index_with_budget(synthetic_vocab()->mask_words() * 4 * 3);
  std::vector<std::vector<std::vector<uint32_t>>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { got[size_t(t)] = masks_along(shared); });
  for (auto& th : threads) th.join();
  for (auto& g : got) EXPECT_EQ(g, reference);
}

// ---------------------------------------------------------------- GrammarCache

std::string schema_text(int i) {
  return R"({"type":"object","properties":{"k)" + std::to_string(i) + R"(":{"type":"integer"}},"required":["k)" +
         std::to_string(i) + R"("],"additionalProperties":false})";
}

struct Builder {
  std::shared_ptr<const Vocabulary> vocab = synthetic_vocab();
  int builds = 0;
  GrammarCache::Build for_text(const std::string& text) {
    return [this, text] {
      ++builds;
      return std::make_shared<GrammarIndex>(compile_schema(Json::parse(text)).grammar, vocab);
    };
  }
};

TEST(GrammarCacheTest, HitsReturnTheSameIndex) {
  GrammarCache cache;
  Builder b;
  auto a1 = cache.get(schema_text(1), b.for_text(schema_text(1)));
  auto a2 = cache.get(schema_text(1), b.for_text(schema_text(1)));
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(b.builds, 1);
  auto st = cache.stats();
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.entries, 1u);
  // The key (schema text, kept twice) counts too.
  EXPECT_GE(st.bytes, a1->memory_bytes() + 2 * schema_text(1).size());
  EXPECT_LE(st.bytes, a1->memory_bytes() + 2 * schema_text(1).size() + 1024);
}

TEST(GrammarCacheTest, HugeKeysCountAgainstTheByteBound) {
  // Before, only the indexes were counted: schemas of megabytes (a 60,000-value enum) took the
  // cache far past its bound. Here the keys alone are over it.
  GrammarCacheOptions opt;
  opt.max_bytes = 1 << 20;
  GrammarCache cache(opt);
  Builder b;
  for (int i = 0; i < 8; ++i) {
    const std::string key = schema_text(1) + std::string(300 << 10, ' ') + std::to_string(i);
    cache.get(key, b.for_text(schema_text(1)));
  }
  auto st = cache.stats();
  EXPECT_LE(st.bytes, opt.max_bytes);
  EXPECT_LE(st.entries, 1u);
  EXPECT_GE(st.evictions, 7u);
}

TEST(GrammarCacheTest, EntryBoundEvictsLeastRecentlyUsed) {
  GrammarCacheOptions opt;
  opt.max_entries = 2;
  GrammarCache cache(opt);
  Builder b;
  auto s0 = cache.get(schema_text(0), b.for_text(schema_text(0)));
  cache.get(schema_text(1), b.for_text(schema_text(1)));
  cache.get(schema_text(0), b.for_text(schema_text(0)));  // 0 is now most recent
  cache.get(schema_text(2), b.for_text(schema_text(2)));  // evicts 1
  EXPECT_EQ(b.builds, 3);
  EXPECT_EQ(cache.get(schema_text(0), b.for_text(schema_text(0))), s0);
  EXPECT_EQ(b.builds, 3);
  cache.get(schema_text(1), b.for_text(schema_text(1)));  // rebuilt
  EXPECT_EQ(b.builds, 4);
  auto st = cache.stats();
  EXPECT_EQ(st.entries, 2u);
  EXPECT_EQ(st.evictions, 2u);
}

TEST(GrammarCacheTest, ByteBoundCountsMasksAndRebuildGivesSameMasks) {
  Builder b;
  // Room for one grammar with a few masks, not two with many.
  auto probe = b.for_text(kSchema.dump())();
  const size_t base = probe->memory_bytes();
  GrammarCacheOptions opt;
  // The entry's key (the schema text, kept twice) and nodes count too.
  opt.max_bytes = base + 2 * kSchema.dump().size() + 160 + 8 * synthetic_vocab()->mask_words() * 4;
  GrammarCache cache(opt);
  b.builds = 0;
  auto first = cache.get(kSchema.dump(), b.for_text(kSchema.dump()));
  auto reference = masks_along(first);
  EXPECT_GT(first->memory_bytes(), opt.max_bytes);  // grew past the bound while in use
  // The next lookup notices and drops it (the holder keeps using it); a later one rebuilds.
  auto again = cache.get(kSchema.dump(), b.for_text(kSchema.dump()));
  EXPECT_EQ(again, first);
  EXPECT_EQ(cache.stats().entries, 0u);
  auto rebuilt = cache.get(kSchema.dump(), b.for_text(kSchema.dump()));
  EXPECT_NE(rebuilt, first);
  EXPECT_EQ(b.builds, 2);
  EXPECT_EQ(masks_along(rebuilt), reference);
  EXPECT_EQ(masks_along(first), reference);  // the dropped one still works for its holders
}

TEST(GrammarCacheTest, BuildErrorsAreNotCached) {
  GrammarCache cache;
  int calls = 0;
  auto bad = [&]() -> std::shared_ptr<GrammarIndex> {
    ++calls;
    throw std::runtime_error("bad schema");
  };
  EXPECT_THROW(cache.get("x", bad), std::runtime_error);
  EXPECT_THROW(cache.get("x", bad), std::runtime_error);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cache.stats().entries, 0u);
}

TEST(GrammarCacheTest, ConcurrentLookupsUnderTightBounds) {
  GrammarCacheOptions opt;
  opt.max_entries = 3;
  GrammarCache cache(opt);
  auto vocab = synthetic_vocab();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        int k = (i * 7 + t) % 6;
        std::string text = schema_text(k);
        auto idx = cache.get(text, [&] {
          return std::make_shared<GrammarIndex>(compile_schema(Json::parse(text)).grammar, vocab);
        });
        // The index must be the grammar of this schema: it accepts {"k<k>":1} and no other key.
        if (!testing::accepts_text(idx, "{\"k" + std::to_string(k) + "\":1}")) ++wrong;
        if (testing::accepts_text(idx, "{\"k" + std::to_string((k + 1) % 6) + "\":1}")) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(cache.stats().entries, 3u);
}

}  // namespace
}  // namespace ringlm::guided
