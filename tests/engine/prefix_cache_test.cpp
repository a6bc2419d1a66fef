// engine::PrefixCache on a tiny random-weight q4_0 model: a restored prefix continues exactly
// as if it had been computed (bit-identical logits), a shared start is found block by block,
// the byte bound holds with the least recently used chain dropped, and through the batch
// scheduler a request whose prefix another request computed reuses it (hit counted) and
// still gives exactly its run-alone tokens.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "engine/batch_scheduler.h"
#include "engine/generator.h"
#include "engine/prefix_cache.h"
#include "model/testing/test_checkpoint.h"

namespace fs = std::filesystem;
using namespace ringlm;

namespace {

fs::path dir_name() { return fs::temp_directory_path() / ("ringlm_prefix_cache_test_" + std::to_string(::getpid())); }

engine::Engine& q4_engine() {
  static engine::Engine e = [] {
    model::testing::TestCheckpointOptions o;
    o.preset = "tiny";
    o.seed = 21;
    o.tokenizer_dir = fs::path(RINGLM_TOKENIZER_DIR);
    model::testing::write_test_checkpoint(dir_name(), o);
    return engine::Engine({.model_dir = dir_name(), .threads = 2, .weights = model::WeightFormat::q4_0});
  }();
  return e;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(dir_name(), ec);
  }
} cleanup;

std::vector<std::int32_t> tokens(std::size_t n, int salt) {
  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i < n; ++i) ids.push_back(static_cast<std::int32_t>(300 + (i * 37 + salt * 11) % 400));
  return ids;
}

std::vector<std::int64_t> positions(std::int64_t from, std::size_t n) {
  std::vector<std::int64_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = from + static_cast<std::int64_t>(i);
  return p;
}

model::Session session() { return model::Session(q4_engine().model(), {.context_tokens = 512}); }

void prefill(model::Session& s, const std::vector<std::int32_t>& ids) {
  s.prefill(std::span(ids).subspan(static_cast<std::size_t>(s.next_position())),
            positions(s.next_position(), ids.size() - static_cast<std::size_t>(s.next_position())), model::LogitsMode::None);
}

constexpr std::size_t B = engine::PrefixCache::kBlockTokens;

}  // namespace

TEST(PrefixCache, RestoredPrefixContinuesBitIdentically) {
  const auto p = tokens(100, 1);  // past the tiny model's sliding ring: blocks stored while held
  engine::PrefixCache cache(64u << 20);
  model::Session a = session();
  for (std::size_t at = 0; at < p.size(); at += 40) {  // chunked, inserting as prefill goes
    const std::size_t n = std::min<std::size_t>(40, p.size() - at);
    a.prefill(std::span(p).subspan(at, n), positions(static_cast<std::int64_t>(at), n), model::LogitsMode::None);
    cache.insert(p, at + n, a);
  }
  EXPECT_EQ(cache.stats().blocks, p.size() / B);
  EXPECT_EQ(cache.stats().bytes, p.size() / B * B * a.kv_position_bytes());
  const std::size_t held = cache.lookup(p, p.size());
  ASSERT_EQ(held, p.size() / B * B);  // 96

  model::Session b = session();
  cache.restore(p, held, b);
  ASSERT_EQ(b.next_position(), static_cast<std::int64_t>(held));
  prefill(b, p);  // the 4 tokens after the cached blocks
  const auto next = tokens(5, 9);
  for (std::size_t i = 0; i < next.size(); ++i) {
    const std::int64_t pos = static_cast<std::int64_t>(p.size() + i);
    const auto ra = a.decode(next[i], pos);
    const std::vector<float> la(ra.begin(), ra.end());
    const auto lb = b.decode(next[i], pos);
    ASSERT_EQ(lb.size(), la.size());
    for (std::size_t k = 0; k < la.size(); ++k) ASSERT_EQ(lb[k], la[k]) << "token " << i << " logit " << k;
  }
}

TEST(PrefixCache, SharedStartsAreFoundBlockByBlock) {
  const auto p = tokens(70, 2);
  engine::PrefixCache cache(64u << 20);
  model::Session a = session();
  prefill(a, p);
  cache.insert(p, p.size(), a);
  auto q = p;
  q.resize(40);
  const auto tail = tokens(30, 3);
  q.insert(q.end(), tail.begin(), tail.end());
  EXPECT_EQ(cache.lookup(q, q.size()), 32u);  // blocks 0 and 1 are shared; block 2 differs at token 40
  EXPECT_EQ(cache.lookup(q, 20), 16u);        // the limit (the last prompt token must run) is respected
  auto other = tokens(70, 4);
  EXPECT_EQ(cache.lookup(other, other.size()), 0u);
  // A session already holding the first block takes only the second from the cache.
  model::Session b = session();
  prefill(b, std::vector<std::int32_t>(q.begin(), q.begin() + 16));
  cache.restore(q, 32, b);
  EXPECT_EQ(b.next_position(), 32);
}

TEST(PrefixCache, ByteBoundDropsTheLeastRecentlyUsedChain) {
  model::Session probe = session();
  const std::size_t block = B * probe.kv_position_bytes();
  engine::PrefixCache cache(7 * block);  // room for two 3-block prompts, not three
  const auto p1 = tokens(48, 5), p2 = tokens(48, 6), p3 = tokens(48, 7);
  for (const auto* p : {&p1, &p2}) {
    model::Session s = session();
    prefill(s, *p);
    cache.insert(*p, p->size(), s);
  }
  EXPECT_EQ(cache.stats().bytes, 6 * block);
  {  // p1 is used again: p2 is now the least recently used
    model::Session s = session();
    cache.restore(p1, cache.lookup(p1, 48), s);
  }
  model::Session s3 = session();
  prefill(s3, p3);
  cache.insert(p3, p3.size(), s3);
  EXPECT_LE(cache.stats().bytes, 7 * block);
  EXPECT_EQ(cache.stats().evicted_blocks, 3u);  // p2's first block, with the two after it
  EXPECT_EQ(cache.lookup(p1, 48), 48u);
  EXPECT_EQ(cache.lookup(p2, 48), 0u);
  EXPECT_EQ(cache.lookup(p3, 48), 48u);
  engine::PrefixCache tiny(block - 1);  // not even one block: holds nothing, never fails
  tiny.insert(p1, p1.size(), s3);
  EXPECT_EQ(tiny.stats().blocks, 0u);
}

namespace {

struct SeqRun {
  engine::GenerationResult result;
  std::vector<std::int32_t> ids;
  bool done = false;
};

engine::SequenceRequest request(const std::vector<std::int32_t>& prompt, SeqRun& run,
                                std::shared_ptr<const engine::PromptEmbeddings> media = nullptr) {
  engine::SequenceRequest r;
  r.prompt = prompt;
  r.params.max_tokens = 6;
  r.params.ignore_stop_ids = true;
  r.params.prompt_embeddings = std::move(media);
  r.on_token = [&run](const engine::TokenEvent& e) {
    run.ids.push_back(e.id);
    return true;
  };
  r.on_done = [&run](engine::SequenceOutcome&& o) {
    run.result = std::move(o.result);
    run.done = true;
  };
  return r;
}

void drain(engine::BatchScheduler& s) {
  while (s.step() > 0) {
  }
}

}  // namespace

TEST(PrefixCache, SchedulerReusesAnotherRequestsPrefixExactly) {
  auto& engine = q4_engine();
  const auto prefix = tokens(90, 8);
  std::vector<std::vector<std::int32_t>> prompts;
  for (int i = 0; i < 3; ++i) {
    auto p = prefix;
    const auto tail = tokens(5 + 3 * i, 30 + i);
    p.insert(p.end(), tail.begin(), tail.end());
    prompts.push_back(p);
  }
  std::vector<std::vector<std::int32_t>> alone;
  for (const auto& p : prompts) {
    engine::Generator g(engine);
    SeqRun r;
    engine::GenerationParams params;
    params.max_tokens = 6;
    params.ignore_stop_ids = true;
    g.generate(p, params, [&r](const engine::TokenEvent& e) {
      r.ids.push_back(e.id);
      return true;
    });
    alone.push_back(r.ids);
  }
  // No slot reuse: only the prefix cache can supply the shared start.
  engine::BatchScheduler sched(engine, {.max_sequences = 2, .reuse_slot_cache = false, .prefix_cache_bytes = 64u << 20});
  std::vector<SeqRun> runs(3);
  sched.admit(request(prompts[0], runs[0]));
  drain(sched);
  sched.admit(request(prompts[1], runs[1]));
  sched.admit(request(prompts[2], runs[2]));
  drain(sched);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(runs[i].done);
    EXPECT_EQ(runs[i].ids, alone[i]) << "prompt " << i;
  }
  EXPECT_EQ(runs[0].result.cached_prompt_tokens, 0);
  EXPECT_EQ(runs[1].result.cached_prompt_tokens, 80);  // five whole blocks of the 90 shared tokens
  EXPECT_EQ(runs[2].result.cached_prompt_tokens, 80);
  const auto& st = sched.stats();
  EXPECT_EQ(st.prefix_cache.hits, 2u);
  EXPECT_EQ(st.prefix_cache.misses, 1u);
  EXPECT_EQ(st.prefix_cache.hit_tokens, 160u);
  EXPECT_EQ(st.prefix_misses, 1u);
  EXPECT_GT(st.prefix_cache.bytes, 0u);
}

TEST(PrefixCache, NothingAfterTheFirstSoftTokenIsStoredOrReused) {
  auto& engine = q4_engine();
  const int hidden = engine.model()->config().hidden_size;
  auto media = std::make_shared<engine::PromptEmbeddings>();
  media->hidden = hidden;
  media->positions = {40, 41};
  media->rows.assign(2 * static_cast<std::size_t>(hidden), 0.25f);
  const auto prompt = tokens(80, 11);
  engine::BatchScheduler sched(engine, {.max_sequences = 1, .reuse_slot_cache = false, .prefix_cache_bytes = 64u << 20});
  SeqRun a, b;
  sched.admit(request(prompt, a, media));
  drain(sched);
  EXPECT_EQ(sched.stats().prefix_cache.blocks, 2u);  // tokens 0..31: the block holding position 40 is not stored
  sched.admit(request(prompt, b, media));
  drain(sched);
  EXPECT_EQ(b.result.cached_prompt_tokens, 32);
  EXPECT_EQ(a.ids, b.ids);
}
