// attend_heads / attend_one against a float64 softmax-attention written out directly, on
// random caches with GQA groups, empty slots, future positions and a sliding window; and
// splitting the heads over calls must not change a single bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/ref_ops.h"

using namespace ringlm::kernels;

namespace {

struct Case {
  int n_heads, n_kv_heads, head_dim, n_slots, window;
  std::int64_t q_pos;
};

struct Data {
  std::vector<float> q, k, v;
  std::vector<std::int32_t> pos;
};

Data make_data(const Case& c, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Data x;
  x.q.resize(static_cast<std::size_t>(c.n_heads) * c.head_dim);
  x.k.resize(static_cast<std::size_t>(c.n_slots) * c.n_kv_heads * c.head_dim);
  x.v.resize(x.k.size());
  for (auto* vec : {&x.q, &x.k, &x.v})
    for (auto& f : *vec) f = nd(rng);
  x.pos.resize(c.n_slots);
  // A ring-like mix: mostly filled slots in shuffled order, some empty, some in the future.
  for (int s = 0; s < c.n_slots; ++s) x.pos[s] = s;
  std::shuffle(x.pos.begin(), x.pos.end(), rng);
  for (int s = 0; s < c.n_slots; s += 7) x.pos[s] = -1;
  return x;
}

std::vector<double> reference(const Case& c, const Data& x, float scale) {
  const int group = c.n_heads / c.n_kv_heads, d = c.head_dim;
  std::vector<double> out(static_cast<std::size_t>(c.n_heads) * d, 0.0);
  for (int h = 0; h < c.n_heads; ++h) {
    const int g = h / group;
    std::vector<double> sc;
    std::vector<int> slots;
    for (int s = 0; s < c.n_slots; ++s) {
      const std::int64_t p = x.pos[s];
      if (p < 0 || p > c.q_pos || (c.window > 0 && c.q_pos - p >= c.window)) continue;
      double dot = 0;
      for (int i = 0; i < d; ++i)
        dot += static_cast<double>(x.q[h * d + i]) * x.k[(static_cast<std::size_t>(s) * c.n_kv_heads + g) * d + i];
      sc.push_back(scale * dot);
      slots.push_back(s);
    }
    if (sc.empty()) continue;
    double mx = *std::max_element(sc.begin(), sc.end()), den = 0;
    for (auto& e : sc) den += (e = std::exp(e - mx));
    for (std::size_t j = 0; j < sc.size(); ++j)
      for (int i = 0; i < d; ++i)
        out[h * d + i] += sc[j] / den * x.v[(static_cast<std::size_t>(slots[j]) * c.n_kv_heads + g) * d + i];
  }
  return out;
}

KvSlots slots_of(const Case& c, const Data& x) {
  return {x.k.data(), x.v.data(), x.pos.data(), c.n_slots, c.n_kv_heads, c.head_dim};
}

}  // namespace

TEST(Attention, MatchesFloat64Reference) {
  const Case cases[] = {{8, 1, 64, 300, 0, 250},   {8, 2, 32, 100, 16, 90}, {4, 4, 16, 50, 0, 49},
                        {8, 1, 128, 40, 0, 5},      {6, 3, 8, 20, 4, 19},    {2, 1, 16, 10, 0, -1}};
  unsigned seed = 1;
  for (const Case& c : cases) {
    const Data x = make_data(c, seed++);
    const KvSlots kv = slots_of(c, x);
    std::vector<float> scratch(attend_scratch_floats(c.n_heads, kv)), out(x.q.size(), 123.0f);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    attend_one(x.q.data(), c.n_heads, c.q_pos, kv, c.window, scale, scratch.data(), out.data());
    const auto ref = reference(c, x, scale);
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], 2e-5) << "case heads " << c.n_heads << " i " << i;
  }
}

TEST(Attention, HeadSplitsAreBitIdentical) {
  const Case c{8, 2, 32, 200, 0, 180};
  const Data x = make_data(c, 99);
  const KvSlots kv = slots_of(c, x);
  std::vector<float> scratch(attend_scratch_floats(c.n_heads, kv)), whole(x.q.size()), split(x.q.size());
  attend_one(x.q.data(), c.n_heads, c.q_pos, kv, 0, 0.125f, scratch.data(), whole.data());
  for (int cut : {1, 3, 4, 5, 7}) {
    std::fill(split.begin(), split.end(), -1.0f);
    attend_heads(x.q.data(), c.n_heads, 0, cut, c.q_pos, kv, 0, 0.125f, scratch.data(), split.data());
    attend_heads(x.q.data(), c.n_heads, cut, c.n_heads, c.q_pos, kv, 0, 0.125f, scratch.data(), split.data());
    for (std::size_t i = 0; i < whole.size(); ++i) ASSERT_EQ(whole[i], split[i]) << "cut " << cut << " i " << i;
  }
}

// The vectorizable tanh behind gelu and the logit soft cap, against float64 std::tanh over
// the whole float range that matters (and beyond), including signed zero and huge inputs.
TEST(FastTanh, MatchesFloat64) {
  double worst = 0;
  for (double u = -50.0; u <= 50.0; u += 0.000731) {
    const double got = tanh_fast(static_cast<float>(u));
    worst = std::max(worst, std::abs(got - std::tanh(static_cast<double>(static_cast<float>(u)))));
  }
  EXPECT_LT(worst, 3e-7);
  for (float tiny : {1e-30f, 1e-8f, 1e-4f}) {
    EXPECT_NEAR(tanh_fast(tiny), tiny, 1e-7 * tiny + 1e-12);
    EXPECT_NEAR(tanh_fast(-tiny), -tiny, 1e-7 * tiny + 1e-12);
  }
  EXPECT_EQ(tanh_fast(1e30f), 1.0f);
  EXPECT_EQ(tanh_fast(-1e30f), -1.0f);
  EXPECT_EQ(tanh_fast(0.0f), 0.0f);
  // gelu_mul and soft_cap give the same value for an element wherever it sits in the array
  // (vector body or scalar tail): the subset LM head relies on this.
  std::vector<float> xs(37), cap(37), one(1);
  for (int i = 0; i < 37; ++i) xs[i] = cap[i] = -9.0f + 0.5f * i;
  soft_cap(cap.data(), 37, 30.0f);
  for (int i = 0; i < 37; ++i) {
    one[0] = xs[i];
    soft_cap(one.data(), 1, 30.0f);
    ASSERT_EQ(one[0], cap[i]) << i;
  }
}
