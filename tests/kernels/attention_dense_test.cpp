// The towers' dense attention (attend_dense, attention.h) on every ISA path the build and CPU
// have, forced one at a time, against (1) a float64 softmax-attention written out here and
// (2) the reference attend_one (ref_ops.h) called as the vision tower called it (every key
// at position 0, query position 0, no window), on fresh random problems of several shapes:
// query and key counts that are not multiples of the 48-row query block or the 64-key tile
// (and below one tile), head groups 1, 2 and 3, head_dim below, at and past a register
// (tails), extreme scores, keys != queries, no keys. Plus thread-count invariance and the
// shape checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/dispatch.h"
#include "kernels/ref_ops.h"
#include "kernels/ref_parallel.h"
#include "test_support.h"
#include "util/error.h"

using namespace ringlm::kernels;

namespace {

struct Case {
  int n_q, n_k, n_heads, n_kv, d;
  float q_mag = 1.0f;  // 1: scores ~N(0, 1) after the 1/sqrt(d) scale; 30: |scores| in the hundreds
  std::string name() const {
    return "q=" + std::to_string(n_q) + " k=" + std::to_string(n_k) + " heads=" + std::to_string(n_heads) + "/" +
           std::to_string(n_kv) + " d=" + std::to_string(d) + " qmag=" + std::to_string(q_mag);
  }
};

struct Data {
  std::vector<float> q, k, v;
};

Data make_data(const Case& c, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Data x;
  x.q.resize(static_cast<std::size_t>(c.n_q) * c.n_heads * c.d);
  x.k.resize(static_cast<std::size_t>(c.n_k) * c.n_kv * c.d);
  x.v.resize(x.k.size());
  for (auto& e : x.q) e = c.q_mag * nd(rng);
  for (auto& e : x.k) e = nd(rng);
  for (auto& e : x.v) e = nd(rng);
  return x;
}

// Float64 softmax attention over every key, and a per-row bound:
//   |out - exact| <= vmax * (2 * sqrt(d) * eps32 * A + 2 * sqrt(n_k) * eps32 + 1e-6)
// A = max_j scale * sum_i |q_i k_ji| (a float32 dot of d terms loses ~sqrt(d) eps A; a
// softmax output moves at most 2 vmax times the largest score error), sqrt(n_k) eps for the
// float32 sums of p and p v over the keys (random-walk rounding), 1e-6 for the exp.
struct Reference {
  std::vector<double> out, tol;  // tol per (query, head) row
};

Reference reference(const Case& c, const Data& x, float scale) {
  constexpr double eps = std::numeric_limits<float>::epsilon();
  const int group = c.n_heads / c.n_kv, d = c.d;
  Reference r;
  r.out.assign(x.q.size(), 0.0);
  r.tol.assign(static_cast<std::size_t>(c.n_q) * c.n_heads, 0.0);
  std::vector<double> sc(c.n_k);
  for (int t = 0; t < c.n_q; ++t)
    for (int h = 0; h < c.n_heads; ++h) {
      const std::size_t row = static_cast<std::size_t>(t) * c.n_heads + h;
      if (c.n_k == 0) continue;
      const float* qr = x.q.data() + row * d;
      const int g = h / group;
      double amax = 0, vmax = 0, mx = -std::numeric_limits<double>::infinity();
      for (int s = 0; s < c.n_k; ++s) {
        const float* ks = x.k.data() + (static_cast<std::size_t>(s) * c.n_kv + g) * d;
        const float* vs = x.v.data() + (static_cast<std::size_t>(s) * c.n_kv + g) * d;
        double dot = 0, adot = 0;
        for (int i = 0; i < d; ++i) {
          dot += static_cast<double>(qr[i]) * ks[i];
          adot += std::abs(static_cast<double>(qr[i]) * ks[i]);
          vmax = std::max(vmax, std::abs(static_cast<double>(vs[i])));
        }
        sc[s] = scale * dot;
        mx = std::max(mx, sc[s]);
        amax = std::max(amax, scale * adot);
      }
      double den = 0;
      for (auto& e : sc) den += (e = std::exp(e - mx));
      for (int s = 0; s < c.n_k; ++s) {
        const float* vs = x.v.data() + (static_cast<std::size_t>(s) * c.n_kv + g) * d;
        for (int i = 0; i < d; ++i) r.out[row * d + i] += sc[s] / den * vs[i];
      }
      r.tol[row] = vmax * (2 * std::sqrt(double(d)) * eps * amax + 2 * std::sqrt(double(c.n_k)) * eps + 1e-6);
    }
  return r;
}

// attend_one as src/vision/vision_tower.cpp called it before attend_dense: all slots at
// position 0, the query at position 0, no window.
std::vector<float> run_attend_one(const Case& c, const Data& x, float scale) {
  std::vector<std::int32_t> pos(c.n_k, 0);
  const KvSlots kv{x.k.data(), x.v.data(), pos.data(), c.n_k, c.n_kv, c.d};
  std::vector<float> scratch(attend_scratch_floats(c.n_heads, kv)), out(x.q.size());
  const std::size_t row = static_cast<std::size_t>(c.n_heads) * c.d;
  for (int t = 0; t < c.n_q; ++t)
    attend_one(x.q.data() + t * row, c.n_heads, 0, kv, 0, scale, scratch.data(), out.data() + t * row);
  return out;
}

std::vector<float> run_dense(const Case& c, const Data& x, float scale, ParallelFor* pool) {
  std::vector<float> out(x.q.size(), 12345.0f);  // poison: every element must be written
  attend_dense(x.q.data(), c.n_q, x.k.data(), x.v.data(), c.n_k, c.n_heads, c.n_kv, c.d, scale, out.data(), pool);
  return out;
}

std::vector<Case> cases() {
  return {
      {1, 1, 1, 1, 64},        // one query, one key
      {7, 7, 4, 2, 16},        // below one tile and one query block; the tiny tower's shape
      {48, 64, 2, 2, 64},      // exactly one query block and one tile
      {49, 65, 3, 3, 64},      // one past each
      {131, 131, 4, 2, 16},    // odd, several blocks and tiles, group 2
      {100, 203, 6, 2, 72},    // head_dim past a register (column tails), group 3, keys != queries
      {97, 50, 2, 1, 5},       // head_dim below every register width
      {60, 300, 2, 2, 33},     // odd head_dim, more keys than queries
      {189, 189, 12, 12, 64},  // the vision tower's heads on a 21x9 patch grid
      {70, 140, 2, 2, 64, 30.0f},  // extreme scores: softmax ~one-hot, the max subtraction matters
      {9, 0, 2, 1, 16},        // no keys: zeros
  };
}

}  // namespace

TEST(DenseAttention, MatchesFloat64AndAttendOneOnEveryIsa) {
  ringlm::kernels::testing::IsaGuard guard;
  std::random_device dev;
  const unsigned seed = dev();  // fresh inputs every run, the seed printed for replay
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  ParallelFor one(1), two(2);
  double worst_ratio = 0;
  for (const Case& c : cases()) {
    const Data x = make_data(c, rng);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
    const Reference ref = reference(c, x, scale);
    const std::vector<float> ref32 = run_attend_one(c, x, scale);
    for (std::size_t i = 0; i < ref32.size(); ++i)
      ASSERT_LE(std::abs(ref32[i] - ref.out[i]), ref.tol[i / c.d]) << c.name() << " attend_one itself, i " << i;
    for (Isa isa : available_isas()) {
      force_isa(isa);
      const std::vector<float> serial = run_dense(c, x, scale, nullptr);
      for (ParallelFor* pool : {&one, &two}) {
        const std::vector<float> out = run_dense(c, x, scale, pool);
        ASSERT_EQ(out, serial) << c.name() << " isa " << isa_name(isa) << ": the thread count changed the bits";
      }
      for (std::size_t i = 0; i < serial.size(); ++i) {
        const double tol = ref.tol[i / c.d];
        if (tol == 0) {
          ASSERT_EQ(serial[i], 0.0f) << c.name() << " no keys must give zeros";
          continue;
        }
        ASSERT_LE(std::abs(serial[i] - ref.out[i]), tol) << c.name() << " isa " << isa_name(isa) << " i " << i;
        // attend_one meets the same bound, so the two are within twice it of each other.
        ASSERT_LE(std::abs(serial[i] - ref32[i]), 2 * tol) << c.name() << " isa " << isa_name(isa) << " vs attend_one";
        worst_ratio = std::max(worst_ratio, std::abs(serial[i] - ref.out[i]) / tol);
      }
    }
  }
  std::printf("worst |err| / bound over all cases and paths: %.3f\n", worst_ratio);
  EXPECT_GT(worst_ratio, 0.0);  // the comparison ran on something
}

TEST(DenseAttention, RejectsBadShapes) {
  std::vector<float> q(64, 1.0f), k(64, 1.0f), v(64, 1.0f), out(64);
  EXPECT_THROW(attend_dense(q.data(), 2, k.data(), v.data(), 2, 3, 2, 8, 1.0f, out.data()), ringlm::Error);
  EXPECT_THROW(attend_dense(q.data(), 2, k.data(), v.data(), 2, 2, 2, 0, 1.0f, out.data()), ringlm::Error);
  EXPECT_THROW(attend_dense(q.data(), -1, k.data(), v.data(), 2, 2, 2, 8, 1.0f, out.data()), ringlm::Error);
  EXPECT_THROW(attend_dense(q.data(), 2, nullptr, v.data(), 2, 2, 2, 8, 1.0f, out.data()), ringlm::Error);
  attend_dense(q.data(), 0, nullptr, nullptr, 0, 2, 2, 8, 1.0f, nullptr);  // nothing to do
}
