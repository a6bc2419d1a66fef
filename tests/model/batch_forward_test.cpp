// model::BatchForward: sequences of different lengths stepped together — some prefilling in
// chunks, some decoding, some guided (deferred head, multi-token forced chunks), joining and
// leaving at different steps — must leave every session exactly as the same calls run on it
// alone: every returned logit and every deferred-head logit bit-identical on the q4_0 path,
// within float rounding on the stored (float) path.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "model/batch_forward.h"
#include "model/model.h"
#include "model/testing/test_checkpoint.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ringlm;
using model::BatchForward;
using model::BatchItem;
using model::LogitsMode;
using model::Session;

namespace {

std::shared_ptr<const model::Model> load_tiny(model::WeightFormat weights) {
  static std::map<int, std::shared_ptr<const model::Model>> cache;
  auto& m = cache[static_cast<int>(weights)];
  if (!m) {
    const fs::path dir = fs::temp_directory_path() /
                         ("ringlm_batch_test_" + std::to_string(static_cast<int>(weights)) + "_" + std::to_string(::getpid()));
    model::testing::TestCheckpointOptions o;
    o.preset = "tiny";
    o.seed = 7;
    model::testing::write_test_checkpoint(dir, o);
    m = model::Model::load(dir, {.threads = 2, .weights = weights});
    fs::remove_all(dir);
  }
  return m;
}

// One call on a session: a chunk of tokens and what it wants back.
struct Call {
  std::vector<std::int32_t> ids;
  LogitsMode mode;
};

// What a call returned: the logits (Last), or for Hidden a subset head and the full head.
struct Output {
  std::vector<float> logits, subset, full;
};

// A sequence: it joins at step `start` and then makes one call per step.
struct Script {
  int start = 0;
  std::vector<Call> calls;
};

Script make_script(int start, int prompt, int decode_steps, bool guided, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  auto tok = [&] { return static_cast<std::int32_t>(rng() % static_cast<unsigned>(vocab)); };
  Script s;
  s.start = start;
  for (int done = 0; done < prompt;) {
    const int n = std::min(Session::kMaxChunk, prompt - done);
    Call c;
    for (int i = 0; i < n; ++i) c.ids.push_back(tok());
    done += n;
    c.mode = done < prompt ? LogitsMode::None : (guided ? LogitsMode::Hidden : LogitsMode::Last);
    s.calls.push_back(std::move(c));
  }
  for (int i = 0; i < decode_steps; ++i) {
    Call c;
    // A guided sequence sometimes feeds a sampled token plus tokens the grammar forces.
    const int n = guided && i % 3 == 1 ? 3 : 1;
    for (int j = 0; j < n; ++j) c.ids.push_back(tok());
    c.mode = guided ? LogitsMode::Hidden : LogitsMode::Last;
    s.calls.push_back(std::move(c));
  }
  return s;
}

std::vector<std::int32_t> subset_ids(int vocab, std::size_t k) {
  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i < k; ++i) ids.push_back(static_cast<std::int32_t>((i * 97 + 5) % static_cast<std::size_t>(vocab)));
  return ids;
}

Output collect(Session& s, LogitsMode mode, std::span<const float> logits, const std::vector<std::int32_t>& subset) {
  Output out;
  if (mode == LogitsMode::Last) out.logits.assign(logits.begin(), logits.end());
  if (mode == LogitsMode::Hidden) {
    auto row = s.head_logits_rows(subset);
    for (auto id : subset) out.subset.push_back(row[id]);
    auto full = s.head_logits();
    out.full.assign(full.begin(), full.end());
  }
  return out;
}

void expect_same(const std::vector<float>& a, const std::vector<float>& b, bool exact, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (exact) ASSERT_EQ(a[i], b[i]) << what << " index " << i;
    else ASSERT_NEAR(a[i], b[i], 2e-4f) << what << " index " << i;
  }
}

}  // namespace

TEST(BatchForward, EveryRowMatchesItsSequenceRunAlone) {
  for (auto weights : {model::WeightFormat::q4_0, model::WeightFormat::stored}) {
    const bool exact = weights == model::WeightFormat::q4_0;
    auto m = load_tiny(weights);
    const int V = m->config().vocab_size;
    ASSERT_GT(m->config().num_kv_shared_layers, 0);
    const auto subset = subset_ids(V, 40);
    // Lengths chosen to cover: a prompt longer than the sliding window (16) and several
    // chunks, one past 256 positions (decode attention then splits the slots over the
    // threads), short prompts, guided sequences with 3-token steps, late joiners, and
    // sequences that finish while others continue.
    std::vector<Script> scripts = {
        make_script(0, 150, 6, false, V, 1),  // 3 prefill chunks, then decodes
        make_script(0, 5, 12, false, V, 2),   // decodes while the first one prefills
        make_script(1, 9, 8, true, V, 3),     // guided, joins at step 1
        make_script(2, 1, 3, false, V, 4),    // one-token prompt, leaves early
        make_script(3, 70, 5, true, V, 5),    // guided, two chunks
        make_script(0, 262, 3, false, V, 6),  // past 256 positions
    };
    // Alone: each sequence on its own session, call after call.
    std::vector<std::vector<Output>> alone(scripts.size());
    for (std::size_t q = 0; q < scripts.size(); ++q) {
      Session s(m);
      std::int64_t pos = 0;
      for (const Call& c : scripts[q].calls) {
        std::vector<std::int64_t> p(c.ids.size());
        for (auto& x : p) x = pos++;
        auto logits = s.prefill(c.ids, p, c.mode);
        alone[q].push_back(collect(s, c.mode, logits, subset));
      }
    }
    // Together: one BatchForward step runs the next call of every active sequence.
    std::vector<std::unique_ptr<Session>> sessions;
    for (std::size_t q = 0; q < scripts.size(); ++q) {
      sessions.push_back(std::make_unique<Session>(m));
      sessions.back()->reserve_head_rows(subset.size());
    }
    BatchForward batch(m, {.max_rows = 6 * Session::kMaxChunk, .max_items = 6});
    std::vector<std::vector<Output>> together(scripts.size());
    std::vector<std::vector<std::int64_t>> pos(scripts.size());
    std::vector<std::vector<std::vector<float>>> batched_heads(scripts.size());
    int max_batch = 0;
    for (int step = 0;; ++step) {
      std::vector<BatchItem> items;
      std::vector<std::size_t> who;
      for (std::size_t q = 0; q < scripts.size(); ++q) {
        const int k = step - scripts[q].start;
        if (k < 0 || k >= static_cast<int>(scripts[q].calls.size())) continue;
        const Call& c = scripts[q].calls[static_cast<std::size_t>(k)];
        const std::int64_t from = sessions[q]->next_position();
        pos[q].resize(c.ids.size());
        for (std::size_t i = 0; i < c.ids.size(); ++i) pos[q][i] = from + static_cast<std::int64_t>(i);
        items.push_back({sessions[q].get(), c.ids, pos[q], c.mode});
        who.push_back(q);
      }
      if (items.empty()) break;
      max_batch = std::max(max_batch, static_cast<int>(items.size()));
      batch.run(items);
      // The guided rows' full heads in one pass, as each session's own head_logits().
      std::vector<Session*> guided;
      std::vector<std::size_t> guided_who;
      for (std::size_t i = 0; i < items.size(); ++i)
        if (items[i].mode == LogitsMode::Hidden) guided.push_back(items[i].session), guided_who.push_back(who[i]);
      batch.head_logits(guided);
      for (std::size_t j = 0; j < guided.size(); ++j) {
        const auto row = batch.head_row(j);
        batched_heads[guided_who[j]].emplace_back(row.begin(), row.end());
      }
      for (std::size_t i = 0; i < items.size(); ++i) {
        std::span<const float> logits;
        if (items[i].mode == LogitsMode::Last) logits = batch.logits(i);
        together[who[i]].push_back(collect(*sessions[who[i]], items[i].mode, logits, subset));
      }
    }
    EXPECT_GE(max_batch, 5);
    for (std::size_t q = 0; q < scripts.size(); ++q) {
      ASSERT_EQ(together[q].size(), alone[q].size());
      for (std::size_t k = 0; k < alone[q].size(); ++k) {
        const std::string what = (exact ? "q4_0" : "stored") + std::string(" sequence ") + std::to_string(q) +
                                 " call " + std::to_string(k);
        expect_same(together[q][k].logits, alone[q][k].logits, exact, what + " logits");
        expect_same(together[q][k].subset, alone[q][k].subset, exact, what + " subset head");
        expect_same(together[q][k].full, alone[q][k].full, exact, what + " deferred full head");
      }
      std::size_t h = 0;
      for (std::size_t k = 0; k < alone[q].size(); ++k) {
        if (alone[q][k].full.empty()) continue;
        ASSERT_LT(h, batched_heads[q].size());
        expect_same(batched_heads[q][h++], alone[q][k].full, exact, "batched deferred head of sequence " + std::to_string(q));
      }
      EXPECT_EQ(h, batched_heads[q].size());
      EXPECT_EQ(sessions[q]->next_position(), pos[q].back() + 1);
    }
  }
}

TEST(BatchForward, ABadItemChangesNoSession) {
  auto m = load_tiny(model::WeightFormat::q4_0);
  Session a(m), b(m);
  BatchForward batch(m, {.max_rows = 8, .max_items = 2});
  std::vector<std::int32_t> ids = {1, 2, 3};
  std::vector<std::int64_t> pos = {0, 1, 2};
  batch.run(std::vector<BatchItem>{{&a, ids, pos, LogitsMode::Last}});
  const std::vector<float> before(batch.logits(0).begin(), batch.logits(0).end());
  std::vector<std::int32_t> one = {4};
  std::vector<std::int64_t> p3 = {3}, past_end = {b.context_capacity()};
  // b's position is past its context: nothing runs, a keeps its state.
  EXPECT_THROW(batch.run(std::vector<BatchItem>{{&a, one, p3, LogitsMode::Last}, {&b, one, past_end, LogitsMode::Last}}),
               Error);
  EXPECT_EQ(a.next_position(), 3);
  EXPECT_EQ(b.next_position(), 0);
  // The same session twice, too many rows, too many items, All mode: refused.
  EXPECT_THROW(batch.run(std::vector<BatchItem>{{&a, one, p3, LogitsMode::Last}, {&a, one, p3, LogitsMode::Last}}),
               Error);
  std::vector<std::int32_t> nine(9, 1);
  std::vector<std::int64_t> p9 = {3, 4, 5, 6, 7, 8, 9, 10, 11};
  EXPECT_THROW(batch.run(std::vector<BatchItem>{{&a, nine, p9, LogitsMode::Last}}), Error);
  Session c(m);
  std::vector<std::int64_t> p0 = {0};
  EXPECT_THROW(batch.run(std::vector<BatchItem>{{&a, one, p3, LogitsMode::Last}, {&b, one, p0, LogitsMode::Last},
                                                {&c, one, p0, LogitsMode::Last}}),
               Error);
  EXPECT_THROW(batch.run(std::vector<BatchItem>{{&a, one, p3, LogitsMode::All}}), Error);
  EXPECT_EQ(a.next_position(), 3);
  // After the refusals a runs on as if nothing happened.
  batch.run(std::vector<BatchItem>{{&a, one, p3, LogitsMode::Last}});
  Session solo(m);
  solo.prefill(ids, pos);
  const auto expect = solo.decode(4, 3);
  for (std::size_t i = 0; i < expect.size(); ++i) ASSERT_EQ(batch.logits(0)[i], expect[i]);
  EXPECT_FALSE(before.empty());
}
