// Sampler::sample_draft, the speculative rejection rule, checked on its own against its exact
// law (issue #33: "a more sensitive distribution test" than the end-to-end ones in
// tests/engine/speculative_sampling_test.cpp, which run a model and count four residue
// classes over a few thousand seeds).
//
// With p the target distribution (float64 reference below: temperature, top-k, min-p,
// top-p, mask) and a draft d drawn from q, the rule emits d accepted with probability
// min(p(d), q(d)) and token i after a rejection with probability max(0, p(i) - q(i)). So the
// pair (accepted?, emitted token) has a known distribution over 2V cells, and one chi-square
// over all of them tests the acceptance rule and the residual draw together, four million
// draws per case (about a second each in the release build). Sampler and drafts use fixed
// seeds, so each statistic is a fixed number; each must have a tail probability above 1e-6
// (X^2 below 58.3 / 44.8 / 40.5 for the three law cases' 16 / 9 / 7 degrees of freedom).
// Checked to fail with wrong rules (sampler.cpp edited, then restored), X^2 of the three law
// cases (correct rule: 13.2 / 14.9 / 8.8, p = 0.66 / 0.094 / 0.27):
//   acceptance 5 % too likely              1,553 / 507 / 628
//   acceptance 1 % too likely              70 / 41 / 30 (caught by the first case)
//   rejection drawing from p, not the residual   13.7 M / 44,523 / 85,255
//   q not renormalised under the mask      (unmasked cases pass) / 56,740 in the masked one
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "sampling/sampler.h"
#include "../chi_square.h"
#include "../sanitizer_build.h"

using namespace ringlm::sampling;
using ringlm::testing::chi_square_p_value;

namespace {

constexpr int kVocab = 12;
// -O0 under ASan is ~20x slower: fewer draws there (the bound is the same, the test is
// less sensitive, not flakier).
const int kDraws = ringlm::testing::kAddressSanitizer ? 200000 : 4000000;

// The target distribution in float64: the mask, then temperature, top-k, min-p and top-p
// (the smallest most likely prefix whose mass reaches top_p), as SamplerParams documents.
std::vector<double> target(const std::vector<float>& logits, const SamplerParams& sp, const std::vector<bool>& allowed) {
  std::vector<int> ids;
  for (int i = 0; i < kVocab; ++i)
    if (allowed[i]) ids.push_back(i);
  std::sort(ids.begin(), ids.end(), [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  const double best = logits[ids[0]];
  if (sp.top_k > 0 && ids.size() > static_cast<std::size_t>(sp.top_k)) ids.resize(sp.top_k);
  std::vector<double> w(ids.size());
  for (std::size_t j = 0; j < ids.size(); ++j) w[j] = std::exp((logits[ids[j]] - best) / sp.temperature);
  std::size_t n = ids.size();
  if (sp.min_p > 0) n = std::count_if(w.begin(), w.end(), [&](double v) { return v >= sp.min_p; });  // sorted: a prefix
  double total = std::accumulate(w.begin(), w.begin() + n, 0.0);
  if (sp.top_p < 1.0f) {
    double acc = 0;
    std::size_t keep = 0;
    while (keep < n && acc < sp.top_p * total) acc += w[keep++];
    n = keep;
    total = acc;
  }
  std::vector<double> p(kVocab, 0.0);
  for (std::size_t j = 0; j < n; ++j) p[ids[j]] = w[j] / total;
  return p;
}

// Every chi-square here must have a tail probability above this (fixed seeds: the statistics
// are fixed numbers, so this is a bound, not a flake rate).
constexpr double kMinPValue = 1e-6;

struct Case {
  std::vector<float> logits;
  SamplerParams params;
  std::vector<bool> allowed = std::vector<bool>(kVocab, true);
  std::vector<float> q;  // the drafter's distribution over the whole vocabulary
};

// Runs kDraws verifications: d ~ q given the mask (a refused draft never reaches the
// verifier), then sample_draft. Expects the joint law of (accepted, token) above.
void expect_exact_law(const Case& c, std::uint64_t draft_seed) {
  const std::vector<double> p = target(c.logits, c.params, c.allowed);
  std::vector<double> qm(kVocab, 0.0);
  double q_mass = 0;
  for (int i = 0; i < kVocab; ++i)
    if (c.allowed[i]) q_mass += c.q[i];
  for (int i = 0; i < kVocab; ++i) qm[i] = c.allowed[i] ? c.q[i] / q_mass : 0.0;
  std::discrete_distribution<int> drafts(qm.begin(), qm.end());
  std::mt19937_64 rng(draft_seed);

  std::vector<std::uint32_t> mask((kVocab + 31) / 32, 0);
  for (int i = 0; i < kVocab; ++i)
    if (c.allowed[i]) mask[i / 32] |= 1u << (i % 32);
  Sampler s(c.params, kVocab);
  std::vector<double> count(2 * kVocab, 0.0);  // [accepted token], then [kVocab + rejected-then-emitted token]
  std::vector<float> row(kVocab);
  for (int n = 0; n < kDraws; ++n) {
    const int d = drafts(rng);
    std::copy(c.logits.begin(), c.logits.end(), row.begin());
    bool accepted = false;
    const std::int32_t t = s.sample_draft(row, mask.data(), {}, d, c.q, &accepted);
    ASSERT_TRUE(t >= 0 && t < kVocab);
    if (accepted) {
      ASSERT_EQ(t, d) << "an accepted draft must be the emitted token";
    }
    count[(accepted ? 0 : kVocab) + t] += 1;
  }
  double x2 = 0;
  int cells = 0;
  for (int i = 0; i < kVocab; ++i) {
    const double expect[2] = {std::min(p[i], qm[i]), std::max(0.0, p[i] - qm[i])};
    for (int a = 0; a < 2; ++a) {
      const double seen = count[a * kVocab + i], e = expect[a] * kDraws;
      if (expect[a] < 1e-12) {
        // A token the target excludes (mask, top-k/p, min-p) is never emitted, and a token
        // whose p <= q is never emitted after a rejection.
        EXPECT_EQ(seen, 0) << "token " << i << (a ? " after a rejection" : " accepted") << ": p " << p[i] << ", q " << qm[i];
        continue;
      }
      x2 += (seen - e) * (seen - e) / e;
      ++cells;
    }
  }
  const double acceptance = std::accumulate(count.begin(), count.begin() + kVocab, 0.0) / kDraws;
  double want_acceptance = 0;
  for (int i = 0; i < kVocab; ++i) want_acceptance += std::min(p[i], qm[i]);
  const double pv = chi_square_p_value(x2, cells - 1);
  std::printf("  X^2 %.1f over %d cells (p %.3g); acceptance %.5f, exact %.5f\n", x2, cells, pv, acceptance,
              want_acceptance);
  EXPECT_GT(pv, kMinPValue) << "X^2 " << x2 << " over " << cells << " cells; acceptance " << acceptance << ", exact "
                            << want_acceptance;
}

std::vector<float> random_logits(std::uint64_t seed, double spread) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0.0, spread);
  std::vector<float> l(kVocab);
  for (auto& v : l) v = static_cast<float>(n(rng));
  return l;
}

// A drafter that disagrees with the target: its own random logits, some tokens at 0.
std::vector<float> random_q(std::uint64_t seed, std::initializer_list<int> zeros) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> e(1.0);
  std::vector<float> q(kVocab);
  for (auto& v : q) v = static_cast<float>(e(rng));
  for (int z : zeros) q[z] = 0.0f;
  const float s = std::accumulate(q.begin(), q.end(), 0.0f);
  for (auto& v : q) v /= s;
  return q;
}

// A case numbered s (11, 21, 31, ...): logits from seed s, the sampler's seed (s / 10) * 101,
// q from seed s + 1 with the given tokens at 0; its drafts use seed s + 2.
Case make_case(std::uint64_t s, double spread, float temperature, std::initializer_list<int> q_zeros) {
  Case c;
  c.logits = random_logits(s, spread);
  c.params.temperature = temperature;
  c.params.seed = (s / 10) * 101;
  c.q = random_q(s + 1, q_zeros);
  return c;
}

}  // namespace

TEST(SampleDraft, TemperatureAloneFollowsTheExactLaw) {
  expect_exact_law(make_case(11, 1.2, 0.8f, {3, 7}), 13);
}

TEST(SampleDraft, TruncatedTargetsNeverEmitWhatTheyCut) {
  // top-k, min-p and top-p cut the target's support; q keeps mass on the cut tokens, so some
  // drafts are tokens with p = 0 (always rejected) and the residual must stay on the support.
  Case c = make_case(21, 1.5, 1.1f, {0});
  c.params.top_k = 9;
  c.params.min_p = 0.02f;
  c.params.top_p = 0.9f;
  const std::vector<double> p = target(c.logits, c.params, c.allowed);
  ASSERT_GE(std::count(p.begin(), p.end(), 0.0), 3) << "the case should cut several tokens";
  expect_exact_law(c, 23);
}

TEST(SampleDraft, MaskedTargetsTakeQGivenTheMask) {
  // A grammar mask: drafts come from q given the mask, and sample_draft renormalises q over
  // the allowed tokens itself (q as given still has mass on refused ones).
  Case c = make_case(31, 1.0, 0.7f, {});
  c.params.top_p = 0.97f;
  for (int refused : {1, 4, 5, 10}) c.allowed[refused] = false;
  expect_exact_law(c, 33);
}

TEST(SampleDraft, AOneHotDraftIsOneSampleAndAComparison) {
  // q empty: the drafter proposes d with certainty (prompt lookup, the greedy assistant).
  // The emitted token follows p, and is accepted exactly when it equals d.
  const std::vector<float> logits = random_logits(41, 1.0);
  SamplerParams sp;
  sp.temperature = 0.9f;
  sp.seed = 404;
  const std::vector<double> p = target(logits, sp, std::vector<bool>(kVocab, true));
  Sampler s(sp, kVocab);
  std::vector<double> count(kVocab, 0.0);
  std::vector<float> row(kVocab);
  const int n = kDraws / 4;
  for (int k = 0; k < n; ++k) {
    const int d = k % kVocab;
    std::copy(logits.begin(), logits.end(), row.begin());
    bool accepted = false;
    const std::int32_t t = s.sample_draft(row, nullptr, {}, d, {}, &accepted);
    ASSERT_EQ(accepted, t == d);
    count[t] += 1;
  }
  double x2 = 0;
  for (int i = 0; i < kVocab; ++i) x2 += (count[i] - p[i] * n) * (count[i] - p[i] * n) / (p[i] * n);
  EXPECT_GT(chi_square_p_value(x2, kVocab - 1), kMinPValue) << "X^2 " << x2;
}

TEST(SampleDraft, GreedyAcceptsExactlyTheArgmax) {
  const std::vector<float> logits = random_logits(51, 1.0);
  const int best = static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  SamplerParams sp;
  sp.temperature = 0.0f;
  Sampler s(sp, kVocab);
  const std::vector<float> q = random_q(52, {});
  std::vector<float> row(kVocab);
  for (int d = 0; d < kVocab; ++d) {
    for (bool with_q : {false, true}) {
      std::copy(logits.begin(), logits.end(), row.begin());
      bool accepted = d != best;  // the wrong answer: sample_draft must set it
      EXPECT_EQ(s.sample_draft(row, nullptr, {}, d, with_q ? std::span<const float>(q) : std::span<const float>(), &accepted),
                best);
      EXPECT_EQ(accepted, d == best) << "draft " << d;
    }
  }
}
