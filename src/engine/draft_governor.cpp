#include "engine/draft_governor.h"

#include <algorithm>
#include <cmath>

namespace ringlm::engine {

void StepCosts::record(int rows, double seconds) {
  if (rows < 1 || rows > kMaxRows || !(seconds > 0) || !std::isfinite(seconds)) return;
  double& c = cost_[static_cast<std::size_t>(rows)];
  std::uint32_t& n = samples_[static_cast<std::size_t>(rows)];
  if (n < UINT32_MAX) ++n;
  c += std::max(kWeight, 1.0 / n) * (seconds - c);  // the mean of the first 1 / kWeight samples
}

double DraftGovernor::expected_tokens(double a, int k) {
  double e = 1.0, p = 1.0;
  for (int j = 0; j < k; ++j) e += (p *= a);
  return e;
}

double DraftGovernor::base_cost(const StepCosts& costs, int base) {
  if (costs.known(base)) return costs.at(base);
  // Not measured (a fresh scheduler's first steps, a new batch size): from the smallest
  // measured count above it, at the prior cost per row.
  for (int r = std::max(base, 0) + 1; r <= StepCosts::kMaxRows; ++r)
    if (costs.known(r)) return costs.at(r) / (1 + kPriorRowCost * (r - base));
  return 0.0;
}

double DraftGovernor::estimate(const StepCosts& costs, int base, int rows) {
  if (costs.known(rows)) return costs.at(rows);
  const double c_base = base_cost(costs, base);
  if (c_base <= 0 || rows <= base) return 0.0;
  auto cost = [&](int r) { return r == base ? c_base : costs.at(r); };
  int r1 = rows - 1;  // the largest measured count below rows, else the base
  while (r1 > base && !costs.known(r1)) --r1;
  int r0 = r1 - 1;  // the one below that, else the base
  while (r0 > base && !costs.known(r0)) --r0;
  double slope = r1 > base ? (cost(r1) - cost(r0)) / (r1 - r0) : kPriorRowCost * c_base;
  slope = std::max(slope, kMinRowCost * c_base);  // noise never makes a row free
  return cost(r1) + slope * (rows - r1);
}

int DraftGovernor::choose(int cap, const StepCosts& costs, int base_rows, int sequences) {
  if (!adaptive_) return std::max(cap, 0);
  if (pause_ > 0) {
    if (--pause_ == 0) probe_ = true;
    return 0;
  }
  if (cap <= 0) return 0;
  if (probe_) return 1;  // cleared by the record() of the step that verifies it
  const double c_base = base_cost(costs, base_rows);
  if (c_base <= 0) return 1;  // nothing measured near: a one-token draft measures a count
  const double t = std::max(sequences, 1);
  const double plain = t / c_base;
  const double a = acceptance();
  double best = plain;
  int best_k = 0;
  for (int k = 1; k <= cap; ++k) {
    const double c = estimate(costs, base_rows, base_rows + k);
    if (c <= 0) break;
    const double rate = (t - 1 + expected_tokens(a, k)) / c;
    if (rate > best) best = rate, best_k = k;
  }
  // The plain step's cost only estimated (from a verify step, at the prior slope): when the
  // margin is thin, one plain step measures it first (no pause). With a wide margin (high
  // acceptance) the estimate cannot change the verdict, and no draft is given up for it.
  if (!costs.known(base_rows) && best < kMeasureMargin * plain) return 0;
  if (best_k > 0) {
    ++spell_;
    return best_k;
  }
  // The mean says no. Early in a spell (under kExplore verified drafts) stop only if an
  // optimistic acceptance (one standard deviation up) says no too; until then one-token
  // drafts, the cheapest evidence: one unlucky early rejection is no verdict (at 70 % the
  // first draft fails 30 % of the time). Later the mean decides (an upper bound over a
  // decayed window would never shrink, and would keep drafting at a small loss).
  const double c1 = estimate(costs, base_rows, base_rows + 1);
  if (explored_ < kExplore && c1 > 0 && (t - 1 + expected_tokens(optimistic_acceptance(), 1)) / c1 > plain) return 1;
  start_pause();
  return 0;
}

double DraftGovernor::optimistic_acceptance() const {
  const double a = acceptance();
  return std::min(1.0, a + kOptimism * std::sqrt(a * (1 - a) / (tried_ + kPriorWeight)));
}

void DraftGovernor::start_pause() {
  const int length = spell_ >= kLongSpell ? kPause : next_pause_;
  next_pause_ = std::min(2 * length, kMaxPause);
  pause_ = length - 1;  // the step that decided is the pause's first
  spell_ = 0;
  explored_ = 0;
  probe_ = false;
  // The evidence that stopped drafting ages over the pause: the probe after it weighs as
  // much as half of it (so a recovered acceptance turns drafting back on at once).
  tried_ *= kPauseAging;
  accepted_ *= kPauseAging;
}

void DraftGovernor::record(int drafted, int accepted) {
  if (!adaptive_ || drafted <= 0) return;
  // Verification stops at the first rejection: the drafts after it say nothing.
  const int tried = accepted < drafted ? accepted + 1 : drafted;
  tried_ = kDecay * tried_ + tried;
  accepted_ = kDecay * accepted_ + accepted;
  if (explored_ < kExplore) explored_ += tried;
  probe_ = false;
}

}  // namespace ringlm::engine
