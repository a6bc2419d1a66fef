#include "engine/draft_governor.h"

#include <algorithm>
#include <cmath>

namespace ringlm::engine {

void StepCosts::record(int rows, double seconds) {
  if (rows < 1 || rows > kMaxRows || !(seconds > 0) || !std::isfinite(seconds)) return;
  double& c = cost_[static_cast<std::size_t>(rows)];
  std::uint32_t& n = samples_[static_cast<std::size_t>(rows)];
  if (n < UINT32_MAX) ++n;
  if (n == 1 || (n <= kFirst && seconds < c)) c = seconds;
  else if (n > kFirst) c += seconds < c ? kWeightDown * (seconds - c) : kWeight * (std::min(seconds, kClip * c) - c);
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
  const double c_base = base_cost(costs, base);
  if (rows <= base || c_base <= 0) return costs.known(rows) ? costs.at(rows) : 0.0;
  // From the base up: a count measured kSure times counts as measured; one measured fewer
  // times counts at most what the counts below it predict (a preempted first sample must not
  // rule a k out for good: the k is tried again, and the next sample corrects it); one not
  // measured is the prediction, a line through the two largest counts below it (the base
  // among them; with the base alone, kPriorRowCost x c(base) a row).
  int r0 = base, r1 = base;
  double c0 = c_base, c1 = c_base;
  for (int r = base + 1;; ++r) {
    double slope = r1 > base ? (c1 - c0) / (r1 - r0) : kPriorRowCost * c_base;
    // Rows past the measured ones cost less than the slope from the base says (the first
    // extra row of a step is the dear one on the q4_0 path: it changes the matmul form; later
    // rows add a little each), so a larger k is tried and measured rather than ruled out.
    if (r1 > base && r0 == base) slope *= kFarRowShrink;
    slope = std::max(slope, kMinRowCost * c_base);  // noise never makes a row free
    const double predicted = c1 + slope * (r - r1);
    double c = predicted;
    if (costs.known(r)) c = costs.samples(r) >= static_cast<std::uint32_t>(kSure) ? costs.at(r) : std::min(costs.at(r), predicted);
    // Measured or not, a row never counts under kMinRowCost x c(base): a plain step measured
    // on a slow spell (and not again while every step drafts) made 2 rows look cheaper than
    // 1 on full-size E2B, and auto drafted every step at 0 % (0.79x no drafting).
    c = std::max(c, c_base * (1 + kMinRowCost * (r - base)));
    if (r == rows) return c;
    if (costs.known(r)) r0 = r1, c0 = c1, r1 = r, c1 = c;
  }
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
  // A pause is long against a reply (32 steps and more), so it is not started on a cost
  // measured fewer than kSure times: a preempted step can make one sample of c(R + 1) look
  // dear enough to stop drafting at 70 % (measured: 0.68x always for the rest of a reply).
  // One more one-token draft measures it again (at 0 % the exploring drafts above measure
  // it as often already).
  if (base_rows < StepCosts::kMaxRows && costs.samples(base_rows + 1) < static_cast<std::uint32_t>(kSure)) return 1;
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
  explored_ = kExplore;  // after the pause the probe alone decides (no more exploring drafts at 0 %)
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
