// engine::BatchScheduler on a tiny random-weight q4_0 model: requests stepped together —
// prompts of different lengths (several chunks, one token), greedy and seeded sampling with
// logprobs, guided JSON (subset and full deferred heads, forced tokens), staggered joins,
// a cancellation — must produce exactly what each request gives alone through a Generator.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <unistd.h>

#include "engine/assistant_drafter.h"
#include "engine/batch_scheduler.h"
#include "engine/generator.h"
#include "model/testing/test_assistant.h"
#include "model/testing/test_checkpoint.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ringlm;

namespace {

const fs::path& model_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("ringlm_batch_sched_test_" + std::to_string(::getpid()));
    model::testing::TestCheckpointOptions o;
    o.preset = "tiny";
    o.seed = 13;
    o.tokenizer_dir = fs::path(RINGLM_TOKENIZER_DIR);  // chat template only
    model::testing::write_test_checkpoint(d, o);
    return d;
  }();
  return dir;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("ringlm_batch_sched_test_" + std::to_string(::getpid())), ec);
  }
} cleanup;

engine::Engine& q4_engine() {
  static engine::Engine e({.model_dir = model_dir(), .threads = 2, .weights = model::WeightFormat::q4_0});
  return e;
}

std::vector<std::int32_t> prompt_of(std::size_t n, int salt) {
  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i < n; ++i) ids.push_back(static_cast<std::int32_t>(300 + (i * 37 + salt * 11) % 400));
  return ids;
}

struct SeqRun {
  engine::GenerationResult result;
  std::vector<engine::TokenEvent> events;
  std::string error;
  bool done = false;
};

struct Case {
  std::vector<std::int32_t> prompt;
  engine::GenerationParams params;
  int join_step = 0;
};

const char* kSchema =
    R"({"type":"object","properties":{"color":{"enum":["red","green","blue"]},"n":{"type":"integer"},"note":{"type":"string","maxLength":12}},"required":["color","n","note"],"additionalProperties":false})";

std::vector<Case> cases() {
  std::vector<Case> cs;
  auto greedy = [](int n) {
    engine::GenerationParams p;
    p.max_tokens = n;
    p.ignore_stop_ids = true;
    return p;
  };
  cs.push_back({prompt_of(150, 1), greedy(12), 0});  // three prompt chunks
  cs.push_back({prompt_of(1, 2), greedy(20), 0});    // one-token prompt
  {
    auto p = greedy(16);
    p.sampling.temperature = 0.9f;
    p.sampling.top_p = 0.9f;
    p.sampling.seed = 77;
    p.logprobs = true;
    p.top_logprobs = 3;
    cs.push_back({prompt_of(30, 3), p, 2});  // joins later, sampled with logprobs
  }
  for (std::uint64_t seed = 0; seed < 2; ++seed) {
    engine::GenerationParams p;
    p.max_tokens = 80;
    p.json_schema = kSchema;
    p.sampling.temperature = 1.0f;
    p.sampling.seed = seed;
    p.logprobs = true;
    p.top_logprobs = 2;
    cs.push_back({prompt_of(20 + 50 * seed, 4 + static_cast<int>(seed)), p, static_cast<int>(seed)});  // guided
  }
  {
    auto p = greedy(30);
    p.stop = {"e"};
    p.ignore_stop_ids = false;
    cs.push_back({prompt_of(9, 6), p, 1});  // stop string / stop id
  }
  return cs;
}

SeqRun alone(engine::Engine& engine, const Case& c) {
  engine::Generator g(engine);
  SeqRun r;
  r.result = g.generate(c.prompt, c.params, [&](const engine::TokenEvent& e) {
    r.events.push_back(e);
    return true;
  });
  r.done = true;
  return r;
}

// Runs the cases through one scheduler, each admitted at its join step (when a slot is free).
std::vector<SeqRun> together(engine::Engine& engine, const std::vector<Case>& cs, int max_sequences,
                          int cancel_case = -1, int cancel_after = 0, int draft_max = 0,
                          engine::BatchStats* stats = nullptr, model::GreedyHead::Stats* greedy = nullptr) {
  engine::BatchScheduler sched(engine, {.max_sequences = max_sequences, .draft_max = draft_max});
  std::vector<SeqRun> runs(cs.size());
  std::vector<std::uint64_t> ids(cs.size(), 0);
  std::size_t admitted = 0;
  for (int step = 0;; ++step) {
    while (admitted < cs.size() && cs[admitted].join_step <= step && sched.has_room()) {
      const std::size_t i = admitted++;
      engine::SequenceRequest req;
      req.prompt = cs[i].prompt;
      req.params = cs[i].params;
      req.on_token = [&runs, i](const engine::TokenEvent& e) {
        runs[i].events.push_back(e);
        return true;
      };
      req.on_done = [&runs, i](engine::SequenceOutcome&& o) {
        EXPECT_FALSE(runs[i].done) << "on_done twice";
        runs[i].result = std::move(o.result);
        runs[i].error = std::move(o.error);
        runs[i].done = true;
      };
      ids[i] = sched.admit(std::move(req));
    }
    if (cancel_case >= 0 && static_cast<int>(runs[cancel_case].events.size()) == cancel_after)
      sched.cancel(ids[cancel_case]);
    if (sched.step() == 0 && admitted == cs.size()) break;
  }
  if (stats) *stats = sched.stats();
  if (greedy) *greedy = sched.greedy_head_stats() ? *sched.greedy_head_stats() : model::GreedyHead::Stats{};
  return runs;
}

void expect_same_run(const SeqRun& a, const SeqRun& b, const std::string& what, bool drafted = false) {
  ASSERT_TRUE(a.done && b.done) << what;
  EXPECT_EQ(a.error, b.error) << what;
  EXPECT_EQ(a.result.text, b.result.text) << what;
  EXPECT_EQ(a.result.finish, b.result.finish) << what;
  EXPECT_EQ(a.result.completion_tokens, b.result.completion_tokens) << what;
  if (!drafted) {  // verified rows always run the full head: these counters differ
    EXPECT_EQ(a.result.guided_steps, b.result.guided_steps) << what;
    EXPECT_EQ(a.result.subset_head_steps, b.result.subset_head_steps) << what;
  }
  ASSERT_EQ(a.events.size(), b.events.size()) << what;
  for (std::size_t k = 0; k < a.events.size(); ++k) {
    EXPECT_EQ(a.events[k].id, b.events[k].id) << what << " token " << k;
    EXPECT_EQ(a.events[k].text, b.events[k].text) << what << " token " << k;
    EXPECT_EQ(a.events[k].logprob, b.events[k].logprob) << what << " token " << k;
    ASSERT_EQ(a.events[k].top.size(), b.events[k].top.size()) << what << " token " << k;
    for (std::size_t j = 0; j < a.events[k].top.size(); ++j) {
      EXPECT_EQ(a.events[k].top[j].id, b.events[k].top[j].id) << what;
      EXPECT_EQ(a.events[k].top[j].logprob, b.events[k].top[j].logprob) << what;
    }
  }
}

// The oracle drafter (engine/draft.h) replaying `recorded`'s tokens, each draft token kept at
// `rate` (corrupted otherwise).
engine::DraftParams oracle_of(const SeqRun& recorded, double rate, int max_tokens) {
  engine::DraftParams d;
  d.source = engine::DraftSource::oracle;
  d.max_tokens = max_tokens;
  d.oracle_accept = rate;
  auto rec = std::make_shared<std::vector<std::int32_t>>();
  for (const auto& e : recorded.events) rec->push_back(e.id);
  d.oracle_tokens = rec;
  return d;
}

}  // namespace

TEST(BatchScheduler, EveryRequestMatchesItsRunAlone) {
  auto& engine = q4_engine();
  const auto cs = cases();
  std::vector<SeqRun> ref;
  for (const auto& c : cs) ref.push_back(alone(engine, c));
  // The guided cases really were guided, some steps on the subset head, some on the full one.
  EXPECT_GT(ref[3].result.guided_steps, ref[3].result.subset_head_steps);
  EXPECT_GT(ref[3].result.subset_head_steps, 0);
  for (int slots : {3, 6}) {
    const auto got = together(engine, cs, slots);
    for (std::size_t i = 0; i < cs.size(); ++i)
      expect_same_run(got[i], ref[i], "case " + std::to_string(i) + " with " + std::to_string(slots) + " slots");
  }
}

TEST(BatchScheduler, CancellingOneLeavesTheOthersUnchanged) {
  auto& engine = q4_engine();
  const auto cs = cases();
  std::vector<SeqRun> ref;
  for (const auto& c : cs) ref.push_back(alone(engine, c));
  const auto got = together(engine, cs, 6, /*cancel_case=*/1, /*cancel_after=*/4);
  ASSERT_TRUE(got[1].done);
  EXPECT_EQ(got[1].result.finish, engine::FinishReason::Cancelled);
  EXPECT_EQ(got[1].events.size(), 4u);
  for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(got[1].events[k].id, ref[1].events[k].id);
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (i != 1) expect_same_run(got[i], ref[i], "case " + std::to_string(i));
}

TEST(BatchScheduler, PinnedPrefixAndSlotReuseGiveTheSameTokens) {
  auto& engine = q4_engine();
  const auto prefix = prompt_of(90, 8);  // longer than the sliding ring: copied, not recomputed
  std::vector<Case> cs;
  for (int i = 0; i < 5; ++i) {
    Case c;
    c.prompt = prefix;
    const auto tail = prompt_of(3 + 4 * i, 20 + i);
    c.prompt.insert(c.prompt.end(), tail.begin(), tail.end());
    c.params.max_tokens = 8;
    c.params.ignore_stop_ids = true;
    cs.push_back(c);
  }
  std::vector<SeqRun> ref;
  for (const auto& c : cs) ref.push_back(alone(engine, c));
  for (bool reuse : {false, true})
    for (int slots : {1, 3}) {
      engine::BatchScheduler sched(engine, {.max_sequences = slots, .reuse_slot_cache = reuse});
      sched.pin_prefix(prefix);
      std::vector<SeqRun> runs(cs.size());
      std::size_t next = 0;
      for (;;) {
        while (next < cs.size() && sched.has_room()) {
          const std::size_t i = next++;
          engine::SequenceRequest req{cs[i].prompt, cs[i].params,
                                      [&runs, i](const engine::TokenEvent& e) {
                                        runs[i].events.push_back(e);
                                        return true;
                                      },
                                      [&runs, i](engine::SequenceOutcome&& o) {
                                        runs[i].result = std::move(o.result);
                                        runs[i].done = true;
                                      }};
          sched.admit(std::move(req));
        }
        if (sched.step() == 0 && next == cs.size()) break;
      }
      for (std::size_t i = 0; i < cs.size(); ++i) {
        expect_same_run(runs[i], ref[i], "case " + std::to_string(i));
        EXPECT_GE(runs[i].result.cached_prompt_tokens, static_cast<int>(prefix.size()));
      }
      EXPECT_GE(sched.stats().prefix_copies, 1u);
    }
}

TEST(BatchScheduler, BadRequestsAreRefusedBeforeTakingASlot) {
  auto& engine = q4_engine();
  engine::BatchScheduler sched(engine, {.max_sequences = 1});
  engine::SequenceRequest empty;
  EXPECT_THROW(sched.admit(empty), Error);
  engine::SequenceRequest bad_schema{prompt_of(4, 1), {}, nullptr, nullptr};
  bad_schema.params.json_schema = "{not json";
  EXPECT_THROW(sched.admit(bad_schema), Error);
  engine::SequenceRequest too_long{prompt_of(static_cast<std::size_t>(sched.context_capacity()), 1), {}, nullptr, nullptr};
  EXPECT_THROW(sched.admit(too_long), Error);
  EXPECT_TRUE(sched.has_room());
  EXPECT_EQ(sched.step(), 0);
  bool done = false;
  engine::SequenceRequest ok{prompt_of(4, 1), {}, nullptr, [&](engine::SequenceOutcome&& o) {
                               done = true;
                               EXPECT_TRUE(o.error.empty());
                             }};
  ok.params.max_tokens = 3;
  sched.admit(std::move(ok));
  EXPECT_FALSE(sched.has_room());
  EXPECT_THROW(sched.admit({prompt_of(4, 2), {}, nullptr, nullptr}), Error);  // no free slot
  while (sched.step() > 0) {
  }
  EXPECT_TRUE(done);
  EXPECT_TRUE(sched.has_room());
}

// Issue #28: a request whose sampler cannot be built (top_p 1e-46 is 0 as a float) used to
// take the slot first (busy, on_done installed) and throw after; the next step then sampled
// with no sampler (SIGSEGV). Now the throw leaves the scheduler as it was, and the next
// request runs on the same slot.
TEST(BatchScheduler, FailedAdmitLeavesTheSchedulerAsItWas) {
  auto& engine = q4_engine();
  engine::BatchScheduler sched(engine, {.max_sequences = 1});
  bool called = false;
  engine::SequenceRequest bad{prompt_of(6, 3), {}, nullptr, [&](engine::SequenceOutcome&&) { called = true; }};
  bad.params.sampling.temperature = 1.0f;
  bad.params.sampling.top_p = static_cast<float>(1e-46);
  bad.params.max_tokens = 4;
  EXPECT_THROW(sched.admit(bad), Error);
  engine::SequenceRequest bad_stop = bad;  // another late failure: an invalid repetition penalty
  bad_stop.params.sampling.top_p = 1.0f;
  bad_stop.params.sampling.repetition_penalty = 0.0f;
  EXPECT_THROW(sched.admit(bad_stop), Error);
  EXPECT_TRUE(sched.has_room());
  EXPECT_EQ(sched.active(), 0);
  EXPECT_EQ(sched.step(), 0);  // nothing runs (before the fix: a step over a busy slot with no sampler)
  EXPECT_FALSE(called);

  bool done = false;
  engine::SequenceRequest ok{prompt_of(6, 3), {}, nullptr, [&](engine::SequenceOutcome&& o) {
                               done = true;
                               EXPECT_TRUE(o.error.empty()) << o.error;
                               EXPECT_EQ(o.result.completion_tokens, 4);
                             }};
  ok.params.max_tokens = 4;
  ok.params.ignore_stop_ids = true;
  sched.admit(std::move(ok));
  while (sched.step() > 0) {
  }
  EXPECT_TRUE(done);
  EXPECT_FALSE(called);
  EXPECT_TRUE(sched.has_room());
}

// Speculative decoding (engine/draft.h): with every draft source the output (tokens, text,
// logprobs, top logprobs) is identical to plain decoding, greedy, sampled and guided, and
// drafted tokens really were accepted and rejected. The first case's prompt (150 tokens)
// and output run past the tiny model's 80-slot sliding ring (16-token window + 64), so
// verification and rollback wrap around the ring.
namespace {
std::vector<Case> draft_cases(engine::DraftParams d) {
  auto cs = cases();
  cs[0].params.max_tokens = 60;  // positions 150..210: more than two ring wraps
  {
    // A prompt that repeats itself: prompt lookup finds long matches.
    Case c;
    for (int r = 0; r < 6; ++r)
      for (int i = 0; i < 12; ++i) c.prompt.push_back(400 + i * 7);
    c.params.max_tokens = 40;
    c.params.ignore_stop_ids = true;
    c.params.logprobs = true;
    c.params.top_logprobs = 2;
    cs.push_back(c);
  }
  for (auto& c : cs) c.params.draft = d;
  return cs;
}
}  // namespace

TEST(SpeculativeDecoding, EveryDraftSourceGivesThePlainOutput) {
  auto& engine = q4_engine();
  const auto plain = draft_cases({});
  std::vector<SeqRun> ref;
  for (const auto& c : plain) ref.push_back(alone(engine, c));
  std::vector<engine::DraftParams> sources;
  {
    engine::DraftParams d;
    d.source = engine::DraftSource::ngram;
    d.max_tokens = 4;
    sources.push_back(d);
    d.adaptive = true;
    sources.push_back(d);
  }
  // One oracle per case would need per-case recordings; the greedy cases' recording is the
  // plain output of case 0, so the others see an unrelated (mostly rejected) draft.
  for (double rate : {1.0, 0.6, 0.0}) sources.push_back(oracle_of(ref[0], rate, 5));
  for (std::size_t si = 0; si < sources.size(); ++si) {
    engine::BatchStats stats;
    const auto got = together(engine, draft_cases(sources[si]), 3, -1, 0, 6, &stats);
    for (std::size_t i = 0; i < got.size(); ++i)
      expect_same_run(got[i], ref[i], "source " + std::to_string(si) + " case " + std::to_string(i), true);
    EXPECT_GT(stats.drafted, 0u) << "source " << si;
    if (si == 2) EXPECT_GE(got[0].result.accepted_drafts, 40) << "the perfect oracle's drafts are accepted";
    if (si == 4) EXPECT_EQ(got[0].result.accepted_drafts, 0) << "the always-wrong oracle's drafts are rejected";
    if (si == 0) EXPECT_GT(got.back().result.accepted_drafts, 0) << "prompt lookup on a repeating prompt";
  }
}

TEST(SpeculativeDecoding, NgramDrafterProposesWhatFollowedTheLongestMatch) {
  engine::NgramDrafter d;
  std::vector<std::int32_t> out;
  const std::vector<std::int32_t> prompt = {1, 2, 3, 9, 9, 1, 2, 3, 4, 5, 6};
  d.propose(prompt, std::vector<std::int32_t>{1, 2, 3}, 2, out);  // "1 2 3" last seen before "4 5"
  EXPECT_EQ(out, (std::vector<std::int32_t>{4, 5}));
  out.clear();
  d.propose(prompt, std::vector<std::int32_t>{7}, 3, out);  // no match at all
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(engine::parse_draft("assistant", 4).source, engine::DraftSource::assistant);
  EXPECT_EQ(engine::parse_draft("assistant:/a/b", 4).assistant_path, "/a/b");
  EXPECT_THROW(engine::parse_draft("assistant:", 4), Error);
  EXPECT_THROW(engine::parse_draft("ngram", 0), Error);
  EXPECT_TRUE(engine::parse_draft("auto", 4).adaptive);
}

// `run`, `chat` and the Python binding generate through a Generator: a request that drafts
// is handed to a one-sequence BatchScheduler (the one implementation of verification). Its
// output must be the plain Generator's, also for a follow-up turn that reuses (and
// respells against) the drafting scheduler's cache, and drafts must really have run.
TEST(SpeculativeDecoding, GeneratorWithDraftGivesThePlainOutput) {
  auto& engine = q4_engine();
  const auto plain = draft_cases({});
  engine::Generator plain_gen(engine);
  std::vector<SeqRun> ref;
  auto run_on = [](engine::Generator& g, const Case& c) {
    SeqRun r;
    r.result = g.generate(c.prompt, c.params, [&](const engine::TokenEvent& e) {
      r.events.push_back(e);
      return true;
    });
    r.done = true;
    return r;
  };
  for (const auto& c : plain) ref.push_back(run_on(plain_gen, c));
  // A follow-up turn: the last case's prompt, its reply and more tokens.
  Case follow = plain.back();
  for (const auto& e : ref.back().events) follow.prompt.push_back(e.id);
  for (int i = 0; i < 10; ++i) follow.prompt.push_back(400 + i * 7);
  ref.push_back(run_on(plain_gen, follow));
  for (const char* source : {"ngram", "auto"}) {
    engine::Generator gen(engine);  // one generator for every case: its drafting cache is reused
    const auto drafted = draft_cases(engine::parse_draft(source, 3));
    int accepted = 0;
    for (std::size_t i = 0; i < drafted.size(); ++i) {
      const SeqRun got = run_on(gen, drafted[i]);
      expect_same_run(got, ref[i], std::string(source) + " case " + std::to_string(i), true);
      accepted += got.result.accepted_drafts;
    }
    Case f = follow;
    f.params.draft = engine::parse_draft(source, 3);
    const SeqRun got = run_on(gen, f);
    expect_same_run(got, ref.back(), std::string(source) + " follow-up", true);
    EXPECT_GT(got.result.cached_prompt_tokens, 0) << "the follow-up reuses the drafting cache";
    EXPECT_GT(accepted + got.result.accepted_drafts, 0) << source << ": no draft was accepted at all";
  }
}

// The adaptive policy itself (auto): tests/engine/draft_governor_test.cpp.

// The Gemma 4 assistant drafter (engine/assistant_drafter.h) on the tiny model with a random
// tiny assistant (centroid head and dense head): greedy, sampled, guided, stop-string and
// ring-wrapping cases give the plain output through the scheduler (3 slots) and through a
// Generator (run, chat, Python), and every round's inputs are the target's real state: a
// recorder around the drafter checks, per round, that the hidden row it got is the one a
// fresh session computes for position p - 1 and that its drafts are what a fresh drafter
// gives over that fresh session's cache (no stale key of a rejected draft, the right row of
// a verify step, the ring wrapped as plain decoding wraps it).
namespace {
const fs::path& assistant_dir(const std::string& preset) {
  static std::map<std::string, fs::path> dirs;
  auto& d = dirs[preset];
  if (d.empty()) {
    d = fs::temp_directory_path() / ("ringlm_batch_sched_test_" + std::to_string(::getpid())) / ("assistant-" + preset);
    model::testing::write_test_assistant(d, {.preset = preset, .seed = 5});
  }
  return d;
}

engine::Engine& stored_engine() {
  static engine::Engine e({.model_dir = model_dir(), .threads = 2, .weights = model::WeightFormat::stored});
  return e;
}

struct Round {
  std::vector<std::int32_t> history;  // prompt + generated at the round
  std::int32_t token = 0;
  std::int64_t position = 0;
  std::vector<float> hidden;
  std::vector<std::int32_t> drafts;
};

// Records each round; then replaces the first (round % 3) drafted tokens with the plain
// greedy continuation (truth, by prompt size), so drafts are accepted and the next round's
// hidden row comes from verify row 0, 1 or 2 (a random assistant's own drafts almost never land).
class RecordingDrafter final : public engine::Drafter {
 public:
  RecordingDrafter(std::unique_ptr<engine::AssistantDrafter> d, std::vector<Round>* rounds,
                   const std::map<std::size_t, std::vector<std::int32_t>>* truth)
      : d_(std::move(d)), rounds_(rounds), truth_(truth) {}
  bool wants_target_state() const override { return true; }
  void set_target_state(const TargetState& s) override {
    state_ = s;
    d_->set_target_state(s);
  }
  void propose(std::span<const std::int32_t> prompt, std::span<const std::int32_t> generated, int max,
               std::vector<std::int32_t>& out) override {
    Round r;
    r.history.assign(prompt.begin(), prompt.end());
    r.history.insert(r.history.end(), generated.begin(), generated.end());
    r.token = state_.token;
    r.position = state_.position;
    r.hidden.assign(state_.hidden.begin(), state_.hidden.end());
    const std::size_t before = out.size();
    d_->propose(prompt, generated, max, out);
    r.drafts.assign(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
    if (r.hidden.empty()) return;
    const auto& t = truth_->at(prompt.size());
    const std::size_t right = rounds_->size() % 3;
    for (std::size_t i = 0; i < right && before + i < out.size() && generated.size() + i < t.size(); ++i)
      out[before + i] = t[generated.size() + i];
    rounds_->push_back(std::move(r));
  }

 private:
  std::unique_ptr<engine::AssistantDrafter> d_;
  std::vector<Round>* rounds_;
  const std::map<std::size_t, std::vector<std::int32_t>>* truth_;
  TargetState state_;
};

double cosine(std::span<const float> a, std::span<const float> b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}
}  // namespace

TEST(AssistantDraft, GreedyAndSampledOutputIsThePlainOutput) {
  // Greedy cases: the plain output. Sampled cases (temperature > 0): the assistant draws its
  // drafts from its own distribution (engine/assistant_drafter.h), which keeps the output's
  // distribution (engine.SpeculativeSampling.AssistantDrafterKeepsTheSamplingDistribution)
  // but not its bits; what must hold is that a seed gives one output, however the request
  // is batched (3 slots here, a Generator alone below), and that a guided reply stays in
  // the grammar (the scheduler fails a token outside the mask).
  auto& engine = q4_engine();
  const auto plain = draft_cases({});
  std::vector<SeqRun> ref;
  for (const auto& c : plain) ref.push_back(alone(engine, c));
  for (const char* preset : {"tiny", "tiny-dense"}) {
    const auto d = engine::parse_draft("assistant:" + assistant_dir(preset).string(), 4);
    engine::BatchStats stats;
    const auto cs = draft_cases(d);
    const auto got = together(engine, cs, 3, -1, 0, 4, &stats);
    int sampled_differs = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const std::string what = std::string(preset) + " case " + std::to_string(i);
      if (cs[i].params.sampling.temperature == 0.0f) {
        expect_same_run(got[i], ref[i], what, true);
        continue;
      }
      EXPECT_TRUE(got[i].error.empty()) << what << ": " << got[i].error;
      expect_same_run(alone(engine, cs[i]), got[i], what + " (Generator vs 3 slots)", true);
      sampled_differs += got[i].result.text != ref[i].result.text;
    }
    EXPECT_GT(stats.drafted, 100u) << preset;
    // Sampled drafts consume the drafter's own generator and (on rejection) a residual draw:
    // some sampled reply must differ from the plain one, or the drafts were not sampled.
    EXPECT_GT(sampled_differs, 0) << preset;
    for (std::size_t i = 0; i < plain.size(); i += 2) {  // through a Generator (run, chat, Python)
      if (plain[i].params.sampling.temperature != 0.0f) continue;
      Case c = plain[i];
      c.params.draft = d;
      expect_same_run(alone(engine, c), ref[i], std::string(preset) + " generator case " + std::to_string(i), true);
    }
  }
}

TEST(AssistantDraft, EveryRoundReadsTheTargetsRealState) {
  auto& engine = stored_engine();
  const auto a = engine::load_assistant(engine, assistant_dir("tiny").string());
  std::vector<Round> rounds;
  std::map<std::size_t, std::vector<std::int32_t>> truth;
  auto cs = draft_cases({});
  cs.resize(2);  // greedy: the 150-token prompt (the ring wraps twice), a one-token prompt
  for (const auto& c : cs)
    for (const auto& e : alone(engine, c).events) truth[c.prompt.size()].push_back(e.id);
  engine::DraftParams d;
  d.source = engine::DraftSource::external;
  d.max_tokens = 3;
  d.make_external = [&] {
    return std::make_unique<RecordingDrafter>(std::make_unique<engine::AssistantDrafter>(a, engine.model()), &rounds,
                                              &truth);
  };
  for (auto& c : cs) c.params.draft = d;
  engine::BatchStats stats;
  const auto got = together(engine, cs, 2, -1, 0, 3, &stats);
  for (std::size_t i = 0; i < cs.size(); ++i)
    for (std::size_t j = 0; j < got[i].events.size(); ++j) ASSERT_EQ(got[i].events[j].id, truth[cs[i].prompt.size()][j]);
  EXPECT_GT(stats.accepted, 20u) << "drafts were accepted, so later rounds start from verify rows 1 and 2";
  ASSERT_GT(rounds.size(), 20u);
  const model::ModelConfig& cfg = engine.model()->config();
  int checked = 0;
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    const Round& R = rounds[r];
    SCOPED_TRACE("round " + std::to_string(r) + " at position " + std::to_string(R.position));
    ASSERT_EQ(static_cast<std::size_t>(R.position) + 1, R.history.size());  // t is the last known token
    ASSERT_EQ(R.token, R.history.back());
    ASSERT_EQ(R.hidden.size(), static_cast<std::size_t>(cfg.hidden_size));
    model::Session fresh(engine.model(), {.context_tokens = 512});
    std::vector<std::int64_t> pos(static_cast<std::size_t>(R.position));
    for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int64_t>(i);
    fresh.prefill(std::span(R.history).first(pos.size()), pos);
    EXPECT_GT(cosine(R.hidden, fresh.head_input()), 0.99999);
    engine::AssistantDrafter again(a, engine.model());
    std::vector<float> h(fresh.head_input().begin(), fresh.head_input().end());
    again.set_target_state({&fresh, R.token, R.position, h});
    std::vector<std::int32_t> want;
    again.propose({}, {}, static_cast<int>(R.drafts.size()), want);
    EXPECT_EQ(R.drafts, want);
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

// The greedy LM head (model/greedy_head.h) runs every step whose rows are all plain greedy:
// batched decode, prompt ends and speculative verification with every draft source. The
// output must be the full head's (a Generator alone, and the same scheduler with the greedy
// head off), and the greedy head must really have run.
TEST(GreedyHead, BatchedAndDraftedGreedyOutputIsTheFullHeadsOutput) {
  auto& on = q4_engine();
  ASSERT_TRUE(on.options().greedy_head);
  static engine::Engine off([] {
    engine::EngineOptions o{.model_dir = model_dir(), .threads = 2, .weights = model::WeightFormat::q4_0};
    o.greedy_head = false;
    return o;
  }());
  std::vector<Case> cs;
  for (int i = 0; i < 4; ++i) {
    Case c;
    c.prompt = prompt_of(i == 0 ? 150 : 9 + 13 * i, i + 1);
    if (i == 3)  // a repeating prompt: prompt lookup finds long matches
      for (int r = 0; r < 5; ++r)
        for (int j = 0; j < 12; ++j) c.prompt.push_back(400 + j * 7);
    c.params.max_tokens = i == 0 ? 40 : 24;
    c.params.ignore_stop_ids = true;
    c.join_step = i == 2 ? 3 : 0;
    cs.push_back(c);
  }
  std::vector<SeqRun> ref;
  for (const auto& c : cs) ref.push_back(alone(on, c));  // a Generator: the Session's full head
  std::vector<engine::DraftParams> sources(1);  // none
  {
    engine::DraftParams d;
    d.source = engine::DraftSource::ngram;
    d.max_tokens = 4;
    sources.push_back(d);
    for (double rate : {1.0, 0.7, 0.0}) sources.push_back(oracle_of(ref[0], rate, 4));
    sources.push_back(engine::parse_draft("assistant:" + assistant_dir("tiny").string(), 4));
  }
  for (std::size_t si = 0; si < sources.size(); ++si) {
    std::vector<Case> with = cs;
    for (auto& c : with) c.params.draft = sources[si];
    const int draft_max = si == 0 ? 0 : 4;
    model::GreedyHead::Stats g_on, g_off;
    engine::BatchStats st;
    const auto got = together(on, with, 3, -1, 0, draft_max, &st, &g_on);
    const auto got_off = together(off, with, 3, -1, 0, draft_max, nullptr, &g_off);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const std::string what = "source " + std::to_string(si) + " case " + std::to_string(i);
      expect_same_run(got[i], ref[i], what, true);
      expect_same_run(got_off[i], ref[i], what + " (greedy head off)", true);
    }
    EXPECT_GT(g_on.rows, 20u) << "source " << si << ": the greedy head ran";
    EXPECT_LT(g_on.fallback_rows * 4, g_on.rows) << "source " << si << ": mostly on the exact candidates";
    EXPECT_EQ(g_off.rows, 0u) << "source " << si;
    if (si > 0) EXPECT_GT(st.drafted, 0u) << "source " << si;
  }
}
