// bench --sections draft --draft-rounds N: auto's cost told from the host's noise. One
// 64-token reply takes ~2 s, and on a shared host two runs of the same binary differ by more
// than the few percent auto costs at 0 % acceptance; so each round runs, per oracle rate,
// four policies back to back (the order rotated each round, so none gets a fixed place):
//   none     no drafting on a scheduler that cannot draft (the baseline),
//   none-d   no drafting on a drafting-capable scheduler (its step timing and kept hidden
//            rows: the overhead every request pays once drafting may happen),
//   auto     the oracle under DraftGovernor (engine/draft_governor.h),
//   always   the oracle drafting k every step,
// and reports each policy's ratio to `none` of the same round (median, min, max over rounds)
// plus, for auto, the share of its time its drafted rows take at the scheduler's own
// measured step costs (at 0 %: what the drafts cost if the host were quiet). --draft-warm keeps one
// scheduler per policy across the rounds after one warm-up reply at 70 % (as Generator and
// serve keep theirs); else every run gets a fresh scheduler (nothing measured: the worst case).
#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/bench_draft.h"
#include "cli/bench_draft_run.h"
#include "util/error.h"

namespace ringlm::cli {

namespace {
using Json = nlohmann::ordered_json;
using bench_draft_detail::DraftRun;

constexpr std::array<const char*, 4> kPolicies = {"none", "none-d", "auto", "always"};

// Steps' seconds the drafted rows add at the measured costs: each drafting step as a step of
// 1 + (mean k) rows against a plain one (exact when every draft had the same k).
double explained_seconds(const DraftRun& r) {
  if (r.draft_rounds == 0) return 0.0;
  const int k = static_cast<int>(static_cast<double>(r.result.drafted_tokens) / static_cast<double>(r.draft_rounds) + 0.5);
  if (!r.costs.known(1) || !r.costs.known(1 + k)) return 0.0;
  return static_cast<double>(r.draft_rounds) * (r.costs.at(1 + k) - r.costs.at(1));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

Json bench_draft_rounds(engine::Engine& engine, const BenchDraftOptions& o) {
  for (const double rate : o.rates)
    if (!(rate >= 0.0 && rate <= 1.0)) fail("bench draft: --draft-rates must be in 0..1, got ", rate);
  const int ctx = o.prompt_tokens + o.decode_tokens + 64;
  const auto prompt = bench_draft_detail::filler_prompt(engine, o.prompt_tokens);
  engine::GenerationParams base;
  base.max_tokens = o.decode_tokens;
  base.ignore_stop_ids = true;
  bench_draft_detail::run_fresh(engine, prompt, base, ctx);  // warm-up: page-in, caches, thread pool
  auto recorded = std::make_shared<const std::vector<std::int32_t>>(bench_draft_detail::run_fresh(engine, prompt, base, ctx).tokens);
  auto params = [&](int policy, double rate, std::uint64_t seed) {
    engine::GenerationParams p = base;
    if (policy < 2) return p;
    p.draft.source = engine::DraftSource::oracle;
    p.draft.max_tokens = o.k;
    p.draft.adaptive = policy == 2;
    p.draft.oracle_tokens = recorded;
    p.draft.oracle_accept = rate;
    p.draft.oracle_seed = seed;
    return p;
  };
  // Warm mode: one scheduler per policy, warmed by one reply of that policy at 70 %.
  std::array<std::unique_ptr<engine::BatchScheduler>, kPolicies.size()> warm;
  if (o.warm)
    for (std::size_t i = 0; i < kPolicies.size(); ++i) {
      warm[i] = std::make_unique<engine::BatchScheduler>(
          engine, engine::BatchSchedulerOptions{.max_sequences = 1, .context_tokens = ctx, .reuse_slot_cache = false,
                                                .draft_max = i == 0 ? 0 : o.k});
      bench_draft_detail::run_on(*warm[i], prompt, params(static_cast<int>(i), 0.7, 999));
    }
  auto run = [&](std::size_t policy, double rate, std::uint64_t seed) {
    const auto p = params(static_cast<int>(policy), rate, seed);
    DraftRun r = o.warm ? bench_draft_detail::run_on(*warm[policy], prompt, p)
                        : bench_draft_detail::run_fresh(engine, prompt, p, ctx, policy == 0 ? 0 : o.k);
    if (r.tokens != *recorded) fail("bench draft: a ", kPolicies[policy], " run's output differs from the plain one");
    return r;
  };
  Json runs = Json::array();
  // ratio[rate][policy]: per round, tok/s over the same round's none.
  std::vector<std::array<std::vector<double>, kPolicies.size()>> ratio(o.rates.size());
  std::vector<std::vector<double>> auto_vs_always(o.rates.size()), explained(o.rates.size()), drafted(o.rates.size());
  for (int round = 0; round < o.rounds; ++round)
    for (std::size_t ri = 0; ri < o.rates.size(); ++ri) {
      std::array<double, kPolicies.size()> tok_s{};
      for (std::size_t j = 0; j < kPolicies.size(); ++j) {
        const std::size_t policy = (j + static_cast<std::size_t>(round) + ri) % kPolicies.size();
        const DraftRun r = run(policy, o.rates[ri], static_cast<std::uint64_t>(round) + 1);
        tok_s[policy] = r.tok_s();
        const double expl = policy == 2 && r.decode_s > 0 ? explained_seconds(r) / r.decode_s : 0.0;
        runs.push_back({{"round", round}, {"rate", o.rates[ri]}, {"policy", kPolicies[policy]}, {"order", j},
                        {"tok_s", r.tok_s()}, {"steps", r.steps}, {"drafted", r.result.drafted_tokens},
                        {"accepted", r.result.accepted_drafts}, {"draft_steps", r.draft_rounds}, {"explained", expl}});
        if (policy == 2) explained[ri].push_back(expl), drafted[ri].push_back(r.result.drafted_tokens);
      }
      for (std::size_t policy = 1; policy < kPolicies.size(); ++policy)
        ratio[ri][policy].push_back(tok_s[0] > 0 ? tok_s[policy] / tok_s[0] : 0.0);
      auto_vs_always[ri].push_back(tok_s[3] > 0 ? tok_s[2] / tok_s[3] : 0.0);
    }
  Json summary = Json::array();
  std::printf("  draft   %d rounds, %s schedulers, k=%d, %d tokens after a %d-token prompt (x = tok/s / the same "
              "round's none: median [min..max])\n",
              o.rounds, o.warm ? "warm" : "fresh", o.k, o.decode_tokens, o.prompt_tokens);
  for (std::size_t ri = 0; ri < o.rates.size(); ++ri) {
    Json row = {{"rate", o.rates[ri]}};
    std::printf("  draft   oracle %3.0f%%:", 100 * o.rates[ri]);
    for (std::size_t policy = 1; policy < kPolicies.size(); ++policy) {
      const auto& v = ratio[ri][policy];
      const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
      row[kPolicies[policy]] = {{"median", median(v)}, {"min", lo}, {"max", hi}};
      std::printf(" %s %.3f [%.2f..%.2f]", kPolicies[policy], median(v), lo, hi);
    }
    row["auto_vs_always"] = median(auto_vs_always[ri]);
    row["auto_explained_cost"] = median(explained[ri]);
    row["auto_drafted"] = median(drafted[ri]);
    std::printf("; auto/always %.3f; auto's drafted rows take %.1f%% of its time at its measured step costs "
                "(median %.0f drafted)\n",
                median(auto_vs_always[ri]), 100 * median(explained[ri]), median(drafted[ri]));
    summary.push_back(row);
  }
  return {{"rounds", o.rounds}, {"warm", o.warm}, {"k", o.k}, {"decode_tokens", o.decode_tokens}, {"summary", summary},
          {"runs", runs}};
}

}  // namespace ringlm::cli
