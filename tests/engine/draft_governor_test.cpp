// The adaptive drafting policy (engine/draft_governor.h) with injected step costs and
// acceptance streams: deterministic, no clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/draft_governor.h"

using namespace ringlm::engine;

namespace {

// Step costs in decode steps: c(1) = 1 and the given costs for 2, 3, ... rows (each
// recorded once, so the table holds them exactly).
StepCosts costs_of(std::vector<double> rows_from_1) {
  StepCosts c;
  for (std::size_t i = 0; i < rows_from_1.size(); ++i) c.record(static_cast<int>(i) + 1, rows_from_1[i]);
  return c;
}

// Full-size E2B-like costs: a 5-row verify step costs 1.9 decode steps.
StepCosts e2b_costs() { return costs_of({1.0, 1.4, 1.6, 1.75, 1.9}); }

// Draft token i is accepted iff floor((i + 1) a) > floor(i a): a deterministic stream with
// acceptance a over any window.
struct Acceptance {
  double a;
  long i = 0;
  bool next() {
    const bool ok = std::floor((i + 1) * a) > std::floor(i * a);
    ++i;
    return ok;
  }
};

struct Sim {
  int steps = 0, drafting_steps = 0, drafted = 0;
  std::vector<int> ks;  // k per step
};

// n steps of one sequence (cap 4, alone in its steps): the governor picks k, the stream
// decides how many leading drafts are accepted.
Sim simulate(DraftGovernor& g, const StepCosts& costs, Acceptance& stream, int n, int cap = 4) {
  Sim s;
  for (int i = 0; i < n; ++i) {
    const int k = g.choose(cap, costs, 1, 1);
    EXPECT_GE(k, 0);
    EXPECT_LE(k, cap);
    s.ks.push_back(k);
    ++s.steps;
    if (k == 0) continue;
    ++s.drafting_steps;
    s.drafted += k;
    int m = 0;
    while (m < k && stream.next()) ++m;
    g.record(k, m);
  }
  return s;
}

}  // namespace

TEST(DraftGovernor, ExpectedTokensAndStepCosts) {
  EXPECT_DOUBLE_EQ(DraftGovernor::expected_tokens(0.0, 4), 1.0);
  EXPECT_DOUBLE_EQ(DraftGovernor::expected_tokens(1.0, 4), 5.0);
  EXPECT_DOUBLE_EQ(DraftGovernor::expected_tokens(0.5, 2), 1.75);
  EXPECT_DOUBLE_EQ(DraftGovernor::expected_tokens(0.7, 0), 1.0);

  StepCosts c;
  c.record(1, 1.0);
  EXPECT_DOUBLE_EQ(c.at(1), 1.0);  // the first sample as is
  c.record(1, 2.0);
  EXPECT_DOUBLE_EQ(c.at(1), 1.5);  // the mean while there are few samples
  for (int i = 2; i < 8; ++i) c.record(1, 1.5);
  EXPECT_DOUBLE_EQ(c.at(1), 1.5);
  c.record(1, 2.5);  // then an average that moves by kWeight of each sample
  EXPECT_DOUBLE_EQ(c.at(1), 1.5 + StepCosts::kWeight);
  c.record(0, 5.0);
  c.record(StepCosts::kMaxRows + 1, 5.0);
  c.record(3, -1.0);
  c.record(3, NAN);
  EXPECT_FALSE(c.known(0));
  EXPECT_FALSE(c.known(3));
  EXPECT_FALSE(c.known(StepCosts::kMaxRows + 1));
  EXPECT_EQ(c.samples(1), 9u);
}

// Unmeasured row counts: extrapolated from the two largest measured counts below (a prior
// slope with one), never cheaper than kMinRowCost per row.
TEST(DraftGovernor, ExtrapolatesUnmeasuredRowCounts) {
  StepCosts c = costs_of({2.0});
  EXPECT_DOUBLE_EQ(DraftGovernor::estimate(c, 1, 1), 2.0);
  EXPECT_DOUBLE_EQ(DraftGovernor::estimate(c, 1, 2), 2.0 * (1 + DraftGovernor::kPriorRowCost));
  EXPECT_DOUBLE_EQ(DraftGovernor::estimate(c, 1, 3), 2.0 * (1 + 2 * DraftGovernor::kPriorRowCost));
  c.record(2, 2.5);
  EXPECT_DOUBLE_EQ(DraftGovernor::estimate(c, 1, 3), 3.0);  // the measured slope
  EXPECT_DOUBLE_EQ(DraftGovernor::estimate(c, 1, 4), 3.5);
  c.record(4, 2.4);                                          // noise: cheaper than 2 rows
  EXPECT_DOUBLE_EQ(DraftGovernor::estimate(c, 1, 3), 3.0);  // from 1..2
  EXPECT_DOUBLE_EQ(DraftGovernor::estimate(c, 1, 6), 2.4 + 2 * 2.0 * DraftGovernor::kMinRowCost);  // a row is never free
  EXPECT_EQ(DraftGovernor::estimate(c, 7, 8), 0.0);  // nothing measured at or above the base
  // An unmeasured base: from the smallest measured count above it at the prior slope.
  EXPECT_DOUBLE_EQ(DraftGovernor::base_cost(c, 3), 2.4 / (1 + DraftGovernor::kPriorRowCost));
  EXPECT_EQ(DraftGovernor::base_cost(c, 4), 2.4);
  EXPECT_EQ(DraftGovernor::base_cost(c, 5), 0.0);
}

TEST(DraftGovernor, NotAdaptiveDraftsTheCapAndAdaptiveStartsFromThePrior) {
  StepCosts none;
  DraftGovernor always(false);
  EXPECT_EQ(always.choose(4, none, 1, 1), 4);
  always.record(4, 0);
  EXPECT_EQ(always.choose(3, none, 1, 1), 3);
  DraftGovernor g(true);
  EXPECT_EQ(g.choose(4, none, 1, 1), 1);  // nothing measured: one drafted token measures c(2)
  EXPECT_EQ(g.paused(), 0);
  const StepCosts c = e2b_costs();
  EXPECT_EQ(g.choose(0, c, 1, 1), 0);  // no room
  EXPECT_EQ(g.paused(), 0);
  // The prior (a = 0.5): 1.75 tokens for 1.6 steps (k = 2) beats 1.5 / 1.4 and 1.875 / 1.75.
  EXPECT_EQ(g.choose(4, c, 1, 1), 2);
}

// Verify cost 1.9 decode steps for 4 drafts (e2b_costs) and 35 % acceptance (where always
// drafting 4 runs at 1.53 tokens / 1.9 steps = 0.8x): drafting turns off, and what is left
// are rare probes.
TEST(DraftGovernor, TurnsOffAt35PercentWithA19StepVerify) {
  DraftGovernor g(true);
  Acceptance stream{0.35};
  const StepCosts c = e2b_costs();
  const Sim warm = simulate(g, c, stream, 200);
  EXPECT_LE(warm.drafting_steps, 12);
  const Sim late = simulate(g, c, stream, 4000);
  EXPECT_LE(late.drafting_steps, 60) << "1.5 %: probes and their one-token follow-ups only";
  EXPECT_GT(late.drafting_steps, 0) << "it still probes";
  // The same stream always drafting 4 would have drafted every step.
  DraftGovernor always(false);
  Acceptance s2{0.35};
  EXPECT_EQ(simulate(always, c, s2, 100).drafting_steps, 100);
}

// 70 %: drafting pays (2.77 tokens / 1.9 steps with k = 4): it stays on, with k = 3..4
// after the slow start, and the running acceptance is the stream's.
TEST(DraftGovernor, StaysOnAt70Percent) {
  DraftGovernor g(true);
  Acceptance stream{0.7};
  const StepCosts c = e2b_costs();
  simulate(g, c, stream, 20);
  const Sim s = simulate(g, c, stream, 1000);
  EXPECT_EQ(s.drafting_steps, 1000);
  EXPECT_EQ(g.paused(), 0);
  EXPECT_GE(static_cast<double>(s.drafted) / s.drafting_steps, 3.0);
  EXPECT_NEAR(g.acceptance(), 0.7, 0.12);
}

// 0 %: each failed probe (one drafted row) doubles the pause, up to kMaxPause; when the
// drafts land again the next probe turns drafting back on and k climbs to the cap.
TEST(DraftGovernor, BacksOffAndComesBackWhenAcceptanceRecovers) {
  DraftGovernor g(true);
  const StepCosts c = e2b_costs();
  Acceptance never{0.0};
  std::vector<int> pauses, probe_k;
  int run = 0;
  for (int i = 0; i < 6000; ++i) {
    const int k = g.choose(4, c, 1, 1);
    if (k == 0) {
      ++run;
      continue;
    }
    if (run > 0) pauses.push_back(run);
    run = 0;
    probe_k.push_back(k);
    g.record(k, 0);
    (void)never;
  }
  ASSERT_GE(pauses.size(), 5u);
  for (std::size_t i = 0; i < pauses.size(); ++i)
    EXPECT_EQ(pauses[i], std::min(DraftGovernor::kPause << i, DraftGovernor::kMaxPause)) << "pause " << i;
  EXPECT_EQ(pauses.back(), DraftGovernor::kMaxPause);
  // The sequence's first draft follows the prior (k = 2), then one-token drafts while an
  // optimistic acceptance still pays, and every probe after a pause drafts one token:
  EXPECT_EQ(probe_k[0], 2);
  for (std::size_t i = 1; i < probe_k.size(); ++i) EXPECT_EQ(probe_k[i], 1) << "draft " << i;
  // one probe per pause, and at the start no more than 2 drafts to learn it loses
  EXPECT_LE(probe_k.size(), pauses.size() + 2);
  // Cost at 0 %: drafted rows over steps, each a 2-row step (0.4 decode steps extra here).
  EXPECT_LE(static_cast<double>(probe_k.size()) * 0.4 / 6000, 0.005);

  // The drafts land again: drafting is back within one pause, and stays on at the cap.
  Acceptance always_right{1.0};
  const Sim s = simulate(g, c, always_right, DraftGovernor::kMaxPause + 100);
  int first = -1;
  for (std::size_t i = 0; i < s.ks.size(); ++i)
    if (s.ks[i] > 0) {
      first = static_cast<int>(i);
      break;
    }
  ASSERT_GE(first, 0);
  EXPECT_LE(first, DraftGovernor::kMaxPause);
  for (std::size_t i = static_cast<std::size_t>(first); i < s.ks.size(); ++i) ASSERT_GT(s.ks[i], 0) << "step " << i;
  EXPECT_EQ(s.ks.back(), 4);
  // After a long spell the next pause starts short again.
  Acceptance bad{0.0};
  DraftGovernor& h = g;
  int k, paused = 0;
  while ((k = h.choose(4, c, 1, 1)) > 0) h.record(k, 0);
  while (h.choose(4, c, 1, 1) == 0) ++paused;
  EXPECT_EQ(paused + 1, DraftGovernor::kPause);
  (void)bad;
}

// In a batch a drafted row costs what it adds to the shared step, weighed against the
// tokens the whole step emits: T - 1 + E(k) over c(R + k) against T over c(R).
TEST(DraftGovernor, WeighsADraftAgainstTheWholeBatch) {
  const StepCosts cheap = costs_of({0.5, 0.8, 0.9, 1.0, 1.05});  // 4 sequences: R = 4, one more row +5 %
  const StepCosts dear = costs_of({0.5, 0.8, 0.9, 1.0, 1.3});    // one more row +30 %
  for (const bool cheap_row : {true, false}) {
    DraftGovernor g(true);
    Acceptance stream{0.35};
    int drafting = 0;
    for (int i = 0; i < 300; ++i) {
      // cap 1: only R + 1 = 5 rows are measured
      const int k = g.choose(1, cheap_row ? cheap : dear, 4, 4);
      if (k == 0) continue;
      ++drafting;
      g.record(k, stream.next() ? 1 : 0);
    }
    if (cheap_row) {
      EXPECT_EQ(drafting, 300) << "(3 + 1.35) / 1.05 > 4 / 1";
    } else {
      EXPECT_LE(drafting, 10) << "(3 + 1.35) / 1.3 < 4 / 1";
    }
  }
}

// Whole replies on a fresh scheduler (nothing measured), with the verify costs measured on
// full-size E2B (BENCHMARKS.md: 2..5-row steps in decode steps, three runs) and random
// acceptance (seeded): auto against no drafting and against always drafting 4, in mean
// tokens per decode step over 200 replies of 64 tokens. What `bench --sections draft`
// measures, without the host's noise.
TEST(DraftGovernor, SimulatedRepliesAgainstNoDraftingAndAlwaysDrafting) {
  const std::vector<std::vector<double>> tables = {
      {1, 1.38, 1.55, 1.57, 1.89}, {1, 1.08, 1.19, 1.33, 1.52}, {1, 1.52, 1.67, 1.73, 2.03}};
  auto reply = [](const std::vector<double>& cost, double rate, bool adaptive, unsigned seed) {
    StepCosts costs;
    DraftGovernor g(adaptive);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u;
    const int tokens = 64;
    int emitted = 1;  // the prefill step's token
    double t = 0;
    while (emitted < tokens) {
      const int k = g.choose(std::min(4, tokens - emitted), costs, 1, 1);
      t += cost[static_cast<std::size_t>(k)];
      costs.record(k + 1, cost[static_cast<std::size_t>(k)]);
      int m = 0;
      while (m < k && u(rng) < rate) ++m;
      g.record(k, m);
      emitted += m + 1;
    }
    return (tokens - 1) / t;  // tokens per decode step: x no drafting
  };
  for (const auto& table : tables)
    for (const double rate : {1.0, 0.7, 0.35, 0.0}) {
      double autos = 0, always = 0;
      const int n = 200;
      for (int s = 0; s < n; ++s) autos += reply(table, rate, true, s), always += reply(table, rate, false, s);
      autos /= n, always /= n;
      const std::string at = "verify 2 rows " + std::to_string(table[1]) + ", rate " + std::to_string(rate);
      EXPECT_GE(autos, 0.97) << at << ": auto never loses more than 3 % to no drafting";
      if (rate >= 0.7) {
        EXPECT_GE(autos / always, 0.95) << at << ": auto keeps most of always drafting's gain";
      } else {
        EXPECT_GT(autos, always) << at;
      }
    }
}
