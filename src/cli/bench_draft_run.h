// One greedy reply through a BatchScheduler, timed from its first token to its last: the
// unit every figure of `bench --sections draft` is made of (cmd_bench_draft.cpp,
// cmd_bench_draft_rounds.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/batch_scheduler.h"
#include "engine/engine.h"

namespace ringlm::cli::bench_draft_detail {

struct DraftRun {
  engine::GenerationResult result;
  std::vector<std::int32_t> tokens;
  std::uint64_t steps = 0;
  std::uint64_t draft_rounds = 0;  // this reply's steps that drafted
  engine::BatchStats stats;        // the scheduler's, at the end
  engine::StepCosts costs;         // the scheduler's measured step costs, at the end
  double decode_s = 0;             // from the first token to the last
  double tok_s() const { return decode_s > 0 ? (result.completion_tokens - 1) / decode_s : 0.0; }
  double step_s() const { return steps > 1 ? decode_s / static_cast<double>(steps - 1) : 0.0; }
};

// On `sched` (whatever it measured before stays: a warm scheduler).
DraftRun run_on(engine::BatchScheduler& sched, const std::vector<std::int32_t>& prompt, const engine::GenerationParams& p);
// On a fresh one-sequence scheduler; draft_max < 0: the request's k (0 without a drafter).
DraftRun run_fresh(engine::Engine& engine, const std::vector<std::int32_t>& prompt, const engine::GenerationParams& p,
                   int ctx, int draft_max = -1);
// n tokens of the bench's filler text.
std::vector<std::int32_t> filler_prompt(const engine::Engine& engine, int n);

}  // namespace ringlm::cli::bench_draft_detail
