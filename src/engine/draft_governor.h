// The `auto` drafting policy (issue #33 item 4): a sequence drafts only while its drafts
// pay for their rows, judged from what this scheduler's steps measurably cost and from
// the sequence's running acceptance; k is the number of drafted tokens that maximises the
// expected tokens per second.
//
// Model. With a per-token acceptance a (draft j is accepted given drafts 0..j-1 were), a
// step that verifies k drafts emits E(k) = 1 + a + ... + a^k tokens. A step of r rows costs
// c(r) seconds (StepCosts: measured on this scheduler's decode and verify steps). A
// sequence in a step of T decoding sequences with R rows besides its drafts picks
//   k* = argmax_k (T - 1 + E(k)) / c(R + k)
// (T = 1: E(k) / c(1 + k) against 1 / c(1), tokens per second with and without drafts).
// k* = 0 turns drafting off for a pause (kPause = 32 steps first: half a short reply, so a
// false stop at high acceptance costs at most that); the pause ends with a probe of one drafted token,
// the cheapest row there is (~0.1-0.5 decode steps on full-size E2B), and each pause after
// a spell in which drafting paid (by the mean acceptance) on fewer than kLongSpell steps
// doubles (kPause .. kMaxPause steps), so a sequence whose drafts never land pays for ever
// rarer probes; a longer paying spell starts the next pause at kPause again.
//
// A row count not measured yet is extrapolated linearly from the two largest measured
// counts below it (with only the plain step R measured: kPriorRowCost x c(R) per row, about
// what a 2-row verify step costs on full-size E2B; through R and one count above it, that
// slope x kFarRowShrink, since the first extra row is the dear one); a count measured fewer
// than kSure times counts at most as predicted (a preempted first sample must not rule a k
// out for good), and no count is taken under kMinRowCost x c(R) a row. An unmeasured plain
// step is taken from the smallest measured count above it at the prior slope, and with
// nothing measured near the sequence drafts one token (which measures a count); drafting on
// such an estimate needs a gain of kMeasureMargin, else one plain step measures c(R) first.
// In the sequence's first kExplore verified drafts the decision to stop is taken on an
// optimistic acceptance (one standard deviation up): until then a sequence drafts one token
// a step, the cheapest evidence, so one unlucky early rejection is no verdict; and no pause
// starts before c(R + 1) is measured kSure times (a preempted verify step is no verdict
// either). After a pause the probe and the mean decide alone.
#pragma once

#include <array>
#include <cstdint>

namespace ringlm::engine {

// Seconds per step by row count (1 .. kMaxRows). A step's time is its work plus whatever the
// host adds (another process preempting it), never less, so every count's figure tracks the
// low end of its samples rather than their mean: the smallest of the first kFirst samples,
// then a moving average that moves kWeightDown of the way to a faster sample and kWeight of
// the way to a slower one (about the lower quartile), a slower sample counting at most kClip
// x the figure. So a preempted step among the first few samples does not make a row count
// look dear (one did: 0.68x always at 70 %, a pause for the rest of a reply), a lone spike
// later moves it by at most kWeight x (kClip - 1), and a lasting change of load is followed
// both ways. Every count is judged the same way, so their ratios stay fair. No allocation.
class StepCosts {
 public:
  static constexpr int kMaxRows = 64;
  static constexpr double kWeight = 0.125;     // of a slower sample
  static constexpr double kWeightDown = 0.375;  // of a faster one
  static constexpr double kClip = 1.5;         // a sample counts at most this x the figure
  static constexpr int kFirst = 3;             // samples judged by their minimum
  void record(int rows, double seconds);
  bool known(int rows) const { return rows >= 1 && rows <= kMaxRows && samples_[rows] > 0; }
  double at(int rows) const { return known(rows) ? cost_[rows] : 0.0; }
  std::uint32_t samples(int rows) const { return rows >= 1 && rows <= kMaxRows ? samples_[rows] : 0; }

 private:
  std::array<double, kMaxRows + 1> cost_{};
  std::array<std::uint32_t, kMaxRows + 1> samples_{};
};

class DraftGovernor {
 public:
  static constexpr double kPriorAccept = 0.5;  // acceptance before evidence ...
  static constexpr double kPriorWeight = 1.0;  // ... worth this many verified drafts
  static constexpr double kDecay = 0.95;       // old evidence's weight per verify step
  static constexpr double kOptimism = 1.0;     // standard deviations: when to stop (choose) ...
  static constexpr int kExplore = 8;           // ... in the sequence's first verified drafts
  static constexpr double kPauseAging = 0.5;   // the evidence's weight after a pause
  static constexpr double kPriorRowCost = 0.35;  // an unmeasured extra row, x c(R), with one point
  static constexpr double kMinRowCost = 0.05;    // a row never counts less than this x c(R)
  static constexpr double kMeasureMargin = 1.25;  // drafting on an unmeasured c(R) needs this gain
  static constexpr int kSure = 2;  // samples before a count counts as measured (estimate, choose)
  static constexpr double kFarRowShrink = 0.5;  // rows past R + 1, x the slope from R (with R + 1 measured)
  static constexpr int kPause = 32;
  static constexpr int kMaxPause = 1024;
  static constexpr int kLongSpell = 8;  // paying drafting steps after which a pause starts short again

  explicit DraftGovernor(bool adaptive = false) : adaptive_(adaptive) {}

  // Once per step where the sequence may draft up to `cap` tokens (cap may be 0): how many
  // to draft (0..cap). base_rows: the step's rows without this sequence's drafts;
  // sequences: the decoding sequences in the step (this one included). Not adaptive: cap.
  int choose(int cap, const StepCosts& costs, int base_rows, int sequences);
  // After a verify step: `drafted` tokens were verified, the first `accepted` taken.
  void record(int drafted, int accepted);

  // The running per-token acceptance (prior included).
  double acceptance() const { return (accepted_ + kPriorWeight * kPriorAccept) / (tried_ + kPriorWeight); }
  // One standard deviation above it (binomial, over the decayed evidence and the prior).
  double optimistic_acceptance() const;
  int paused() const { return pause_; }
  // Expected tokens emitted by a step verifying k drafts at per-token acceptance a.
  static double expected_tokens(double a, int k);
  // The plain step's cost: measured, or from the smallest measured count above it at
  // kPriorRowCost per row (0: none). (Exposed for the tests.)
  static double base_cost(const StepCosts& costs, int base);
  // The step cost of `rows`: measured, or extrapolated from the two largest measured
  // counts between base and rows (the prior slope with the base alone; 0: no base cost).
  static double estimate(const StepCosts& costs, int base, int rows);

 private:
  void start_pause();

  bool adaptive_;
  int pause_ = 0;
  int next_pause_ = kPause;
  bool probe_ = false;  // the pause just ended: the next draft is a one-token probe
  int spell_ = 0;       // steps since drafting (re)started where the mean estimate drafted
  int explored_ = 0;    // verified drafts in the exploring start (up to kExplore; kExplore after a pause)
  double tried_ = 0, accepted_ = 0;  // decayed counts of verified drafts and accepted ones
};

}  // namespace ringlm::engine
