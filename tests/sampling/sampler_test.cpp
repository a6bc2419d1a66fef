#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <limits>
#include <vector>

#include "sampling/sampler.h"
#include "util/error.h"

using namespace ringlm::sampling;

namespace {

std::vector<double> softmax(const std::vector<float>& l, double t) {
  double m = -1e300;
  for (float v : l) m = std::max(m, static_cast<double>(v));
  std::vector<double> p(l.size());
  double s = 0;
  for (size_t i = 0; i < l.size(); ++i) s += p[i] = std::exp((l[i] - m) / t);
  for (auto& v : p) v /= s;
  return p;
}

// Empirical frequencies of `n` draws.
std::vector<double> draw(Sampler& s, const std::vector<float>& logits, int n, const std::uint32_t* mask = nullptr) {
  std::vector<double> f(logits.size(), 0);
  for (int i = 0; i < n; ++i) {
    auto row = logits;
    f[s.sample(row, mask, {})] += 1.0 / n;
  }
  return f;
}

void expect_close_to(const std::vector<double>& f, const std::vector<double>& p, int n) {
  for (size_t i = 0; i < p.size(); ++i) {
    double sigma = std::sqrt(p[i] * (1 - p[i]) / n) + 1e-9;
    EXPECT_LE(std::fabs(f[i] - p[i]), 5 * sigma + 1e-12) << "token " << i << " freq " << f[i] << " expected " << p[i];
  }
}

}  // namespace

TEST(Sampler, GreedyPicksArgmaxAndRespectsMask) {
  Sampler s({}, 40);
  std::vector<float> l(40, 0.0f);
  l[7] = 3.0f;
  l[33] = 2.0f;
  auto row = l;
  EXPECT_EQ(s.sample(row, nullptr, {}), 7);
  std::uint32_t mask[2] = {0, 1u << 1};  // only token 33
  row = l;
  EXPECT_EQ(s.sample(row, mask, {}), 33);
  EXPECT_TRUE(std::isinf(row[7]) && row[7] < 0) << "mask is applied in place";
}

// Greedy over a full-size row (the vectorised maximum, then the first index holding it)
// against a plain one-pass argmax: random logits, ties of the maximum (the first wins),
// -0 against +0, the maximum in the lanes or in the tail, and a NaN anywhere.
TEST(Sampler, GreedyIsTheFirstArgmaxOnLargeRows) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (int vocab : {262144, 262151, 17, 3}) {
    Sampler s({}, vocab);
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<float> l(static_cast<std::size_t>(vocab));
      for (float& v : l) v = nd(rng);
      std::uniform_int_distribution<int> at(0, vocab - 1);
      if (trial == 1 || trial == 2) {  // the maximum twice (or in the tail)
        const int a = trial == 2 ? vocab - 1 : at(rng), b = at(rng);
        l[static_cast<std::size_t>(a)] = l[static_cast<std::size_t>(b)] = 50.0f;
      }
      if (trial == 3) {  // everything zero, of both signs: the first one is the argmax
        for (std::size_t i = 0; i < l.size(); ++i) l[i] = i % 3 ? 0.0f : -0.0f;
      }
      if (trial == 4) l.assign(l.size(), -std::numeric_limits<float>::infinity()), l.back() = -1e30f;
      int want = 0;
      for (int i = 1; i < vocab; ++i)
        if (l[static_cast<std::size_t>(i)] > l[static_cast<std::size_t>(want)]) want = i;
      auto row = l;
      EXPECT_EQ(s.sample(row, nullptr, {}), want) << "vocab " << vocab << " trial " << trial;
      if (trial >= 5) {  // a NaN in the body or the tail is reported, never skipped
        const int bad = trial == 5 ? at(rng) : vocab - 1;
        row = l;
        row[static_cast<std::size_t>(bad)] = std::numeric_limits<float>::quiet_NaN();
        EXPECT_THROW(s.sample(row, nullptr, {}), ringlm::Error) << "vocab " << vocab << " NaN at " << bad;
      }
    }
  }
}

TEST(Sampler, EmptyMaskIsAnError) {
  Sampler s({}, 10);
  std::vector<float> l(10, 1.0f);
  std::uint32_t mask[1] = {0};
  EXPECT_THROW(s.sample(l, mask, {}), ringlm::Error);
}

TEST(Sampler, NaNLogitsAreAnErrorNotAToken) {
  // Before: NaN compared false, so the one finite logit (or the first) was returned forever.
  for (float temperature : {0.0f, 1.0f}) {
    SamplerParams p;
    p.temperature = temperature;
    Sampler s(p, 10);
    std::vector<float> l(10, std::numeric_limits<float>::quiet_NaN());
    l[4] = 1.0f;
    try {
      s.sample(l, nullptr, {});
      ADD_FAILURE() << "a row with NaN logits was sampled";
    } catch (const ringlm::Error& e) {
      EXPECT_NE(std::string(e.what()).find("token 0 is NaN"), std::string::npos) << e.what();
    }
  }
}

TEST(Sampler, TemperatureMatchesSoftmaxFrequencies) {
  std::vector<float> l = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f};
  SamplerParams p;
  p.temperature = 0.7f;
  p.seed = 42;
  Sampler s(p, 5);
  const int n = 40000;
  expect_close_to(draw(s, l, n), softmax(l, 0.7), n);
}

TEST(Sampler, TopKKeepsOnlyTheKBest) {
  std::vector<float> l = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f};
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 2;
  p.seed = 7;
  Sampler s(p, 5);
  const int n = 20000;
  auto f = draw(s, l, n);
  auto q = softmax({l[0], l[3]}, 1.0);
  expect_close_to(f, {q[0], 0, 0, q[1], 0}, n);
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  // probabilities 0.5, 0.3, 0.15, 0.05
  std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_p = 0.7f;
  p.seed = 3;
  Sampler s(p, 4);
  const int n = 20000;
  expect_close_to(draw(s, l, n), {0.5 / 0.8, 0.3 / 0.8, 0, 0}, n);
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  SamplerParams p;
  p.temperature = 1.0f;
  p.min_p = 0.5f;  // keep p >= 0.25
  p.seed = 5;
  Sampler s(p, 4);
  const int n = 20000;
  expect_close_to(draw(s, l, n), {0.5 / 0.8, 0.3 / 0.8, 0, 0}, n);
}

TEST(Sampler, RepetitionPenaltyFollowsHfSemantics) {
  SamplerParams p;
  p.repetition_penalty = 2.0f;
  Sampler s(p, 4);
  std::vector<float> l = {4.0f, 3.0f, -1.0f, 0.5f};
  std::vector<std::int32_t> recent = {0, 2, 0};
  EXPECT_EQ(s.sample(l, nullptr, recent), 1);  // 4/2 = 2 < 3
  EXPECT_FLOAT_EQ(l[0], 2.0f);
  EXPECT_FLOAT_EQ(l[2], -2.0f);  // penalised once, not per occurrence
  EXPECT_FLOAT_EQ(l[3], 0.5f);
}

TEST(Sampler, SameSeedSameSequence) {
  SamplerParams p;
  p.temperature = 1.0f;
  p.seed = 99;
  std::vector<float> l(1000);
  for (int i = 0; i < 1000; ++i) l[i] = std::sin(i * 0.37f) * 3;
  Sampler a(p, 1000), b(p, 1000);
  std::vector<int> sa, sb;
  for (int i = 0; i < 50; ++i) {
    auto r1 = l, r2 = l;
    sa.push_back(a.sample(r1, nullptr, {}));
    sb.push_back(b.sample(r2, nullptr, {}));
  }
  EXPECT_EQ(sa, sb);
  std::map<int, int> distinct;
  for (int v : sa) distinct[v]++;
  EXPECT_GT(distinct.size(), 5u) << "sampling is not degenerate";
}

TEST(Sampler, LogprobsAreNormalised) {
  Sampler s({}, 6);
  s.enable_logprobs(true);
  std::vector<float> l = {0.1f, 2.0f, -1.0f, 0.7f, 0.0f, 1.5f};
  auto row = l;
  int id = s.sample(row, nullptr, {});
  EXPECT_EQ(id, 1);
  std::vector<TokenLogprob> top;
  s.top_logprobs(row, 6, top);
  ASSERT_EQ(top.size(), 6u);
  double total = 0;
  for (auto& t : top) total += std::exp(t.logprob);
  EXPECT_NEAR(total, 1.0, 1e-5);
  EXPECT_EQ(top[0].id, 1);
  EXPECT_EQ(top[1].id, 5);
  EXPECT_NEAR(s.chosen_logprob(), top[0].logprob, 1e-6);
  auto p = softmax(l, 1.0);
  EXPECT_NEAR(std::exp(top[0].logprob), p[1], 1e-5);
}

// Issue #28: the sampling parameters are checked once, as the float the sampler uses. A value
// that was fine as a double but rounds to 0 (1e-46), NaN, inf, and denormals that would
// overflow 1/T or x/penalty are refused with the field named; harmless denormals are taken.
TEST(SamplerParamsCheck, RefusesWhatTheSamplerCannotUseAsAFloat) {
  auto refused = [](SamplerParams p, const char* field) {
    try {
      check_sampler_params(p);
    } catch (const ringlm::Error& e) {
      EXPECT_EQ(e.param(), field) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      EXPECT_THROW(Sampler(p, 8), ringlm::Error);  // the constructor applies the same rule
      return;
    }
    ADD_FAILURE() << field << " was accepted";
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float denormal = 1e-40f;
  ASSERT_GT(denormal, 0.0f);
  ASSERT_LT(denormal, std::numeric_limits<float>::min());
  ASSERT_EQ(static_cast<float>(1e-46), 0.0f);  // the top_p

  SamplerParams p;
  p.top_p = static_cast<float>(1e-46);
  refused(p, "top_p");
  for (float v : {nan, inf, -inf, -0.5f, 1.0000001f}) {
    SamplerParams q;
    q.top_p = v;
    refused(q, "top_p");
  }
  for (float v : {nan, inf, -1.0f, denormal, 1e-5f}) {
    SamplerParams q;
    q.temperature = v;
    refused(q, "temperature");
  }
  for (float v : {nan, -inf, inf, -0.1f, 1.5f}) {
    SamplerParams q;
    q.min_p = v;
    refused(q, "min_p");
  }
  for (float v : {nan, inf, 0.0f, denormal, static_cast<float>(1e-46), 101.0f}) {
    SamplerParams q;
    q.repetition_penalty = v;
    refused(q, "repetition_penalty");
  }
  SamplerParams k;
  k.top_k = -1;
  refused(k, "top_k");
  SamplerParams w;
  w.repetition_window = -1;
  refused(w, "repetition_window");

  // Accepted edges, and they sample sensibly: a denormal top_p keeps only the best token,
  // the smallest temperature behaves like greedy.
  SamplerParams ok;
  ok.temperature = kMinTemperature;
  ok.top_p = denormal;
  ok.min_p = denormal;
  ok.repetition_penalty = kMinRepetitionPenalty;
  EXPECT_NO_THROW(check_sampler_params(ok));
  Sampler s(ok, 4);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> row = {0.5f, 2.0f, 1.9f, -1.0f};
    EXPECT_EQ(s.sample(row, nullptr, {}), 1);
  }
  SamplerParams greedy;  // the defaults: temperature 0
  EXPECT_NO_THROW(check_sampler_params(greedy));
}
