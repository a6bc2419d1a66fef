// Engine-contract tests of model::Session on a random tiny checkpoint: chunking, decode,
// reset, truncate (rollback), capacity errors that leave the cache unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "model/model.h"
#include "model/testing/test_checkpoint.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ringlm;
using model::LogitsMode;
using model::Session;

namespace {

std::shared_ptr<const model::Model> tiny_model(const std::string& preset = "tiny",
                                               model::WeightFormat weights = model::WeightFormat::stored) {
  static std::map<std::string, std::shared_ptr<const model::Model>> cache;
  auto& m = cache[preset + (weights == model::WeightFormat::q4_0 ? "/q4_0" : "")];
  if (!m) {
    const fs::path dir = fs::temp_directory_path() /
                         ("ringlm_session_test_" + preset + "_" + std::to_string(static_cast<int>(weights)) + "_" +
                          std::to_string(::getpid()));
    model::testing::TestCheckpointOptions o;
    o.preset = preset;
    o.seed = 42;
    model::testing::write_test_checkpoint(dir, o);
    m = model::Model::load(dir, {.threads = 2, .weights = weights});
    // The mapping keeps the data alive after the files are unlinked.
    fs::remove_all(dir);
  }
  return m;
}

std::vector<std::int32_t> random_ids(int n, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> ids(n);
  for (auto& id : ids) id = static_cast<std::int32_t>(rng() % vocab);
  return ids;
}

std::vector<std::int64_t> iota_positions(std::int64_t from, int n) {
  std::vector<std::int64_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = from + i;
  return p;
}

// Logits of every position through one prefill call in LogitsMode::All.
std::vector<std::vector<float>> all_logits(Session& s, const std::vector<std::int32_t>& ids, std::int64_t from) {
  std::vector<std::vector<float>> rows;
  auto pos = iota_positions(from, static_cast<int>(ids.size()));
  s.prefill(ids, pos, LogitsMode::All, [&](std::size_t, std::span<const float> r) { rows.emplace_back(r.begin(), r.end()); });
  return rows;
}

float max_diff(std::span<const float> a, std::span<const float> b) {
  float m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace

TEST(Session, PrefillChunksAndDecodeAgree) {
  auto m = tiny_model();
  const int V = m->config().vocab_size;
  auto ids = random_ids(150, V, 1);
  Session a(m), b(m);
  auto rows = all_logits(a, ids, 0);
  ASSERT_EQ(rows.size(), ids.size());
  for (int i = 0; i < 150; ++i) {
    auto r = b.decode(ids[i], i);
    EXPECT_LT(max_diff(r, rows[i]), 1e-4f) << "position " << i;
  }
  // LogitsMode::Last returns the final row.
  Session c(m);
  auto pos = iota_positions(0, 150);
  auto last = c.prefill(ids, pos, LogitsMode::Last);
  EXPECT_LT(max_diff(last, rows.back()), 1e-4f);
  EXPECT_EQ(c.next_position(), 150);
}

TEST(Session, ResetReproducesWithoutReallocating) {
  auto m = tiny_model();
  auto ids = random_ids(100, m->config().vocab_size, 2);
  Session s(m);
  auto first = all_logits(s, ids, 0);
  const std::size_t bytes = s.kv_bytes();
  s.reset();
  EXPECT_EQ(s.next_position(), 0);
  auto second = all_logits(s, ids, 0);
  EXPECT_EQ(s.kv_bytes(), bytes);
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i], second[i]) << "position " << i;
}

TEST(Session, TruncateRollsBackWithinTheWindow) {
  auto m = tiny_model();
  const int V = m->config().vocab_size;
  auto ids = random_ids(120, V, 3);
  Session s(m);
  auto ref = all_logits(s, ids, 0);
  // Roll back 10 positions (well inside the sliding ring's spare slots) and replay them.
  s.truncate(110);
  EXPECT_EQ(s.next_position(), 110);
  for (int i = 110; i < 120; ++i) EXPECT_LT(max_diff(s.decode(ids[i], i), ref[i]), 1e-4f);
  // A different continuation after rollback matches a fresh session fed the same tokens.
  s.truncate(115);
  auto alt = ids;
  alt[115] = (alt[115] + 1) % V;
  auto got = s.decode(alt[115], 115);
  Session fresh(m);
  std::vector<std::int32_t> prefix(alt.begin(), alt.begin() + 116);
  auto want = all_logits(fresh, prefix, 0);
  EXPECT_LT(max_diff(got, want.back()), 1e-4f);
}

TEST(Session, TruncatePastTheRingFailsAndChangesNothing) {
  auto m = tiny_model();
  auto ids = random_ids(200, m->config().vocab_size, 4);
  Session s(m);
  auto ref = all_logits(s, ids, 0);
  // The ring holds window + 64 = 80 slots: position 100's window (85..99) was overwritten.
  EXPECT_THROW(s.truncate(100), Error);
  EXPECT_EQ(s.next_position(), 200);
  // The cache is untouched: continuing still matches a longer single run.
  auto more = random_ids(1, m->config().vocab_size, 5);
  auto got = s.decode(more[0], 200);
  Session fresh(m);
  auto all = ids;
  all.push_back(more[0]);
  auto want = all_logits(fresh, all, 0);
  EXPECT_LT(max_diff(got, want.back()), 1e-4f);
  s.truncate(0);
  EXPECT_EQ(s.next_position(), 0);
}

TEST(Session, CapacityAndPositionErrorsLeaveTheCacheUnchanged) {
  auto m = tiny_model();
  auto ids = random_ids(40, m->config().vocab_size, 6);
  Session s(m, {.context_tokens = 32});
  EXPECT_EQ(s.context_capacity(), 32);
  auto pos = iota_positions(0, 40);
  EXPECT_THROW(s.prefill(ids, pos, LogitsMode::Last), Error);
  EXPECT_EQ(s.next_position(), 0);
  std::vector<std::int32_t> head(ids.begin(), ids.begin() + 32);
  s.prefill(head, iota_positions(0, 32), LogitsMode::None);
  EXPECT_THROW(s.decode(ids[32], 32), Error);   // past capacity
  EXPECT_THROW(s.decode(ids[0], 31), Error);    // does not follow the cache
  EXPECT_THROW(s.decode(-1, 32), Error);        // bad id
  EXPECT_THROW(s.decode(m->config().vocab_size, 32), Error);
  EXPECT_EQ(s.next_position(), 32);
  EXPECT_THROW(Session(m, {.context_tokens = m->config().max_position_embeddings + 1}), Error);
}

TEST(Session, GappedPositionsThatWouldEvictVisibleKeysAreRejected) {
  auto m = tiny_model();
  auto ids = random_ids(64, m->config().vocab_size, 7);
  Session s(m);
  // 64 tokens spread over positions 0, 2, 4, ...: the chunk spans 127 positions, more than
  // the 80-slot ring can hold while keeping each query's window.
  std::vector<std::int64_t> pos(64);
  for (int i = 0; i < 64; ++i) pos[i] = 2 * i;
  EXPECT_THROW(s.prefill(ids, pos, LogitsMode::None), Error);
  EXPECT_EQ(s.next_position(), 0);
}

TEST(Session, GqaModelRuns) {
  auto m = tiny_model("tiny-gqa");
  EXPECT_EQ(m->config().num_kv_heads, 2);
  auto ids = random_ids(70, m->config().vocab_size, 8);
  Session a(m), b(m);
  auto rows = all_logits(a, ids, 0);
  for (int i = 0; i < 70; ++i) EXPECT_LT(max_diff(b.decode(ids[i], i), rows[i]), 1e-4f);
}

// Prompt rows whose logits nobody wants skip the KV-shared layers (SessionOptions::
// full_prefill = false, the default). That must not change the logits that are returned,
// the hidden state kept for the deferred head, or anything later decoding sees (the cache
// the shared layers read is written by the owning layers, which still run every row). On
// the q4_0 path a row's arithmetic does not depend on the other rows of its chunk, so the
// results are bit-identical; the float path's 4-token dot grouping may round differently.
TEST(Session, SkippingSharedLayersForPromptRowsChangesNoResult) {
  for (auto weights : {model::WeightFormat::stored, model::WeightFormat::q4_0}) {
    const bool exact = weights == model::WeightFormat::q4_0;
    auto m = tiny_model("tiny", weights);
    ASSERT_GT(m->config().num_kv_shared_layers, 0);
    const int V = m->config().vocab_size;
    const auto ids = random_ids(150, V, 11);  // chunks of 64, 64 and 22
    const auto pos = iota_positions(0, 150);
    auto same = [&](std::span<const float> x, std::span<const float> y, const char* what) {
      ASSERT_EQ(x.size(), y.size()) << what;
      if (exact) {
        for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << what << " index " << i;
      } else {
        EXPECT_LT(max_diff(x, y), 1e-5f) << what;
      }
    };
    Session fast(m), full(m, {.full_prefill = true});
    const auto fast_last = fast.prefill(ids, pos, LogitsMode::Last);
    const std::vector<float> kept(fast_last.begin(), fast_last.end());
    same(kept, full.prefill(ids, pos, LogitsMode::Last), "prompt's last logits");
    // Decoding after the prompt reads the caches the prompt wrote.
    std::int32_t next = 5;
    for (int i = 0; i < 6; ++i) {
      const auto f = fast.decode(next, 150 + i);
      const std::vector<float> fv(f.begin(), f.end());
      same(fv, full.decode(next, 150 + i), "decoded logits");
      next = static_cast<std::int32_t>(std::max_element(fv.begin(), fv.end()) - fv.begin());
    }
    // The deferred head (guided decoding) keeps the same hidden state.
    Session fast_h(m), full_h(m, {.full_prefill = true});
    fast_h.prefill(ids, pos, LogitsMode::Hidden);
    full_h.prefill(ids, pos, LogitsMode::Hidden);
    same(fast_h.head_input(), full_h.head_input(), "hidden state for the deferred head");
    // LogitsMode::All still runs every row through every layer.
    Session all_a(m), all_b(m, {.full_prefill = true});
    auto rows_a = all_logits(all_a, ids, 0);
    auto rows_b = all_logits(all_b, ids, 0);
    ASSERT_EQ(rows_a.size(), 150u);
    for (int i = 0; i < 150; i += 37) same(rows_a[i], rows_b[i], "LogitsMode::All row");
    same(rows_a.back(), kept, "All's last row vs Last");
  }
}
