// The bounded one-plane greedy LM head (model/greedy_head.h, kernels/greedy_head.h) on random
// packed q4_0 matrices:
//   * the weight bounds N_b / row norm against a long-double recomputation from the ggml blocks;
//   * the per-token bound E against a long-double reference of both activation
//     representations (exact codes from quantize_act_row_ref) and against the kernels' own
//     one-plane and two-plane outputs, on plain and Gemma-like outlier activations;
//   * the output row: the exact candidates' values bit-identical to the full int8x2 head's,
//     -inf elsewhere, and its first argmax the full head's, on random vectors and on ties and
//     near-ties made on purpose (duplicated and one-nibble-apart rows), with no cap, Gemma's
//     cap and a cap small enough to saturate (the cap check then falls back);
//   * the fallback (a tiny group limit): the full head's row, bit for bit;
//   * the fast tanh's error against the bound the cap check assumes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/greedy_head.h"
#include "kernels/q4_formats.h"
#include "kernels/q4_packed.h"
#include "kernels/q8_act.h"
#include "kernels/ref_matmul.h"
#include "kernels/ref_ops.h"
#include "model/greedy_head.h"
#include "util/error.h"
#include "util/float16.h"

using namespace ringlm;

namespace {

struct Head {
  kernels::Q4PackedBuffer buf;
  kernels::WeightMatrix w;
  std::vector<kernels::BlockQ4_0> blocks;  // the same rows as ggml blocks (the reference reads these)
};

// rows x cols random q4_0 weights with per-block scales spread over two decades; rows
// `dup_from..` copy earlier rows (exact ties) and `near_from..` copy them with one nibble
// moved by one (near-ties).
Head make_head(std::size_t rows, std::size_t cols, std::uint32_t seed, std::size_t dup_from = SIZE_MAX,
               std::size_t near_from = SIZE_MAX) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::uniform_real_distribution<float> decade(-1.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t b = 0; b < cols / 32; ++b) {
      const float s = 0.05f * std::pow(10.0f, decade(rng));
      for (std::size_t j = 0; j < 32; ++j) x[r * cols + b * 32 + j] = s * n01(rng);
    }
  Head h;
  const std::size_t nb = cols / 32;
  h.blocks.resize(rows * nb);
  for (std::size_t r = 0; r < rows; ++r) kernels::quantize_row_q4_0_ref(x.data() + r * cols, h.blocks.data() + r * nb, cols);
  for (std::size_t r = dup_from; r < rows && r < near_from; ++r)
    std::copy_n(h.blocks.data() + (r - dup_from) * nb, nb, h.blocks.data() + r * nb);
  for (std::size_t r = near_from; r < rows; ++r) {
    std::copy_n(h.blocks.data() + (r - near_from) * nb, nb, h.blocks.data() + r * nb);
    std::uint8_t& byte = h.blocks[r * nb + r % nb].qs[r % 16];
    byte = (byte & 0x0f) < 15 ? static_cast<std::uint8_t>(byte + 1) : static_cast<std::uint8_t>(byte - 1);
  }
  h.buf = kernels::Q4PackedBuffer(rows, cols);
  kernels::q4_pack(h.blocks.data(), rows, cols, h.buf.data());
  h.w.dtype = io::DType::Q4_0;
  h.w.data = h.buf.data();
  h.w.rows = static_cast<std::int64_t>(rows);
  h.w.cols = static_cast<std::int64_t>(cols);
  h.w.packed = true;
  h.w.activations = kernels::Q4Activations::int8x2;
  return h;
}

int weight(const kernels::BlockQ4_0& b, std::size_t j) {
  return j < 16 ? (b.qs[j] & 0x0f) - 8 : (b.qs[j - 16] >> 4) - 8;
}

// A hidden vector: normal, and with `outliers` elements 50-200x larger (Gemma's final-normed
// rows have a few huge channels), some blocks all zero.
std::vector<float> hidden(std::size_t cols, std::mt19937& rng, int outliers, bool zero_block) {
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::uniform_int_distribution<std::size_t> at(0, cols - 1);
  std::uniform_real_distribution<float> big(50.0f, 200.0f);
  std::vector<float> h(cols);
  for (float& v : h) v = n01(rng);
  for (int i = 0; i < outliers; ++i) h[at(rng)] *= big(rng);
  if (zero_block) std::fill_n(h.begin() + 32, 32, 0.0f);
  return h;
}

// Long-double one-plane (Y) and two-plane (Z) logits of every row from the exact codes.
void reference(const Head& h, const float* x, std::vector<long double>& y, std::vector<long double>& z) {
  const std::size_t rows = static_cast<std::size_t>(h.w.rows), cols = static_cast<std::size_t>(h.w.cols), nb = cols / 32;
  std::vector<std::int8_t> q(cols), q2(cols);
  std::vector<float> d(nb), d2(nb);
  std::vector<std::int32_t> bias(nb), bias2(nb);
  kernels::quantize_act_row_ref(x, cols, q.data(), d.data(), bias.data(), q2.data(), d2.data(), bias2.data());
  y.assign(rows, 0.0L);
  z.assign(rows, 0.0L);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t b = 0; b < nb; ++b) {
      const kernels::BlockQ4_0& blk = h.blocks[r * nb + b];
      const long double dw = fp16_to_f32(blk.d);
      long double s1 = 0, s2 = 0;
      for (std::size_t j = 0; j < 32; ++j) {
        s1 += static_cast<long double>(weight(blk, j)) * q[b * 32 + j];
        s2 += static_cast<long double>(weight(blk, j)) * q2[b * 32 + j];
      }
      y[r] += dw * d[b] * s1;
      z[r] += dw * (static_cast<long double>(d2[b]) * 254.0L * s1 + static_cast<long double>(d2[b]) * s2);
    }
}

std::vector<float> full_head(const kernels::WeightMatrix& w, const float* x, int n, float cap) {
  std::vector<float> out(static_cast<std::size_t>(n) * static_cast<std::size_t>(w.rows));
  kernels::matmul(w, x, n, out.data(), nullptr);
  if (cap > 0) kernels::soft_cap(out.data(), static_cast<std::int64_t>(out.size()), cap);
  return out;
}

std::size_t first_argmax(const float* row, std::size_t n) {
  return static_cast<std::size_t>(std::max_element(row, row + n) - row);  // first of equal maxima
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST(GreedyHead, WeightBoundsMatchALongDoubleRecomputation) {
  const Head h = make_head(37, 128, 1);  // 37 rows: the last group is padded
  const model::GreedyHeadBounds b = model::make_greedy_head_bounds(h.w, nullptr);
  const std::size_t nb = 4;
  std::vector<long double> nref(nb, 0.0L);
  long double norm2 = 0.0L;
  for (std::size_t r = 0; r < 37; ++r) {
    long double row2 = 0.0L;
    for (std::size_t blk = 0; blk < nb; ++blk) {
      const long double dw = std::fabs(static_cast<long double>(fp16_to_f32(h.blocks[r * nb + blk].d)));
      long double a = 0;
      for (std::size_t j = 0; j < 32; ++j) {
        const int w = weight(h.blocks[r * nb + blk], j);
        a += std::abs(w);
        row2 += dw * dw * w * w;
      }
      nref[blk] = std::max(nref[blk], dw * a);
    }
    norm2 = std::max(norm2, row2);
  }
  for (std::size_t blk = 0; blk < nb; ++blk) {
    EXPECT_GE(static_cast<long double>(b.n_b[blk]), nref[blk]) << blk;
    EXPECT_LE(static_cast<long double>(b.n_b[blk]), nref[blk] * (1 + 1e-9L)) << blk;
  }
  EXPECT_GE(static_cast<long double>(b.rows.row_norm_max), std::sqrt(norm2));
  EXPECT_LE(static_cast<long double>(b.rows.row_norm_max), std::sqrt(norm2) * (1 + 1e-9L));
  // The threaded pass gives the same bounds.
  kernels::ParallelFor pool(2);
  const model::GreedyHeadBounds bp = model::make_greedy_head_bounds(h.w, &pool);
  EXPECT_EQ(bp.n_b, b.n_b);
  EXPECT_EQ(bp.rows.row_norm_max, b.rows.row_norm_max);
}

TEST(GreedyHead, ErrorBoundHoldsForEveryRowOnFreshInputs) {
  const std::size_t rows = 300, cols = 256;
  const Head h = make_head(rows, cols, 2);
  kernels::WeightMatrix one = h.w;
  one.activations = kernels::Q4Activations::int8;
  const model::GreedyHeadBounds b = model::make_greedy_head_bounds(h.w, nullptr);
  std::mt19937 rng(3);
  long double worst_ratio = 0.0L;  // largest observed |Y - Z| / E
  for (int t = 0; t < 40; ++t) {
    const std::vector<float> x = hidden(cols, rng, t % 4 == 0 ? 0 : 1 + t % 5, t % 7 == 0);
    const double E = kernels::one_plane_error_bound(x.data(), cols, b.n_b.data(), b.rows);
    ASSERT_TRUE(std::isfinite(E) && E > 0) << t;
    std::vector<long double> y, z;
    reference(h, x.data(), y, z);
    const std::vector<float> ky = full_head(one, x.data(), 1, 0), kz = full_head(h.w, x.data(), 1, 0);
    for (std::size_t r = 0; r < rows; ++r) {
      // The reference (exact arithmetic) and the kernels (float sums) both within E.
      ASSERT_LE(std::fabs(y[r] - z[r]), static_cast<long double>(E)) << "input " << t << " row " << r;
      ASSERT_LE(std::fabs(static_cast<long double>(ky[r]) - kz[r]), static_cast<long double>(E)) << t << " " << r;
      // And the kernel's one-plane logit is the reference's to within its float slack.
      ASSERT_LE(std::fabs(static_cast<long double>(ky[r]) - y[r]), static_cast<long double>(E)) << t << " " << r;
      worst_ratio = std::max(worst_ratio, std::fabs(static_cast<long double>(ky[r]) - kz[r]) / E);
    }
  }
  // Rigorous, but not uselessly loose (Cauchy-Schwarz over 256 columns: the typical error is
  // ~sqrt(256) below the bound).
  EXPECT_GT(worst_ratio, 1e-3L);
  // A non-finite input has no bound.
  std::vector<float> bad(cols, 1.0f);
  bad[5] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isinf(kernels::one_plane_error_bound(bad.data(), cols, b.n_b.data(), b.rows)));
}

namespace {
// Runs the greedy head over n vectors and checks every row against the full head.
void expect_same_argmax(const Head& h, float cap, const std::vector<float>& xs, int n, std::size_t max_groups,
                        model::GreedyHead::Stats* stats_out) {
  const model::GreedyHeadBounds b = model::make_greedy_head_bounds(h.w, nullptr);
  model::GreedyHead g(h.w, cap, b, n, max_groups);
  const std::size_t V = static_cast<std::size_t>(h.w.rows);
  std::vector<float> out(static_cast<std::size_t>(n) * V);
  kernels::ParallelFor pool(2);
  g.run(xs.data(), n, out.data(), &pool);
  const std::vector<float> full = full_head(h.w, xs.data(), n, cap);
  for (int i = 0; i < n; ++i) {
    const float* o = out.data() + static_cast<std::size_t>(i) * V;
    const float* f = full.data() + static_cast<std::size_t>(i) * V;
    ASSERT_EQ(first_argmax(o, V), first_argmax(f, V)) << "row " << i << " cap " << cap;
    for (std::size_t r = 0; r < V; ++r)
      ASSERT_TRUE(o[r] == -std::numeric_limits<float>::infinity() || same_bits(o[r], f[r]))
          << "row " << i << " logit " << r << ": " << o[r] << " vs the full head's " << f[r];
  }
  *stats_out = g.stats();
}
}  // namespace

TEST(GreedyHead, ArgmaxIsTheFullHeadsOnRandomVectorsTiesAndNearTies) {
  // 1000 rows: 0..599 random, 600..799 exact copies of 0..199, 800..999 one nibble from 0..199.
  const std::size_t rows = 1000, cols = 128;
  const Head h = make_head(rows, cols, 4, 600, 800);
  std::mt19937 rng(5);
  const int n = 24;
  std::vector<float> xs;
  for (int i = 0; i < n; ++i) {
    const std::vector<float> x = hidden(cols, rng, i % 3, i % 5 == 0);
    xs.insert(xs.end(), x.begin(), x.end());
  }
  for (float cap : {0.0f, 30.0f}) {
    model::GreedyHead::Stats st;
    expect_same_argmax(h, cap, xs, n, 0, &st);
    EXPECT_EQ(st.rows, static_cast<std::uint64_t>(n));
    EXPECT_LT(st.fallback_rows, st.rows) << "cap " << cap << ": the exact path must be taken";
    EXPECT_GE(st.candidates, st.rows - st.fallback_rows);
  }
  // A hidden vector aimed at row 7 (x = its dequantized row): rows 7 and 607 tie exactly
  // and 807 is a near-tie; the first index must win, as in the full head.
  std::vector<float> aim(cols);
  kernels::dequantize_row_q4_0(h.blocks.data() + 7 * (cols / 32), aim.data(), cols);
  model::GreedyHead::Stats st;
  expect_same_argmax(h, 30.0f, aim, 1, 0, &st);
  EXPECT_EQ(st.fallback_rows, 0u);
  EXPECT_GE(st.candidates, 2u) << "rows 7 and 607 are equal: both are candidates";
  // A cap so small that the logits saturate: the cap check must refuse (fall back), never
  // return a wrong argmax.
  std::vector<float> loud = xs;
  for (float& v : loud) v *= 50.0f;
  expect_same_argmax(h, 0.05f, loud, n, 0, &st);
  EXPECT_GT(st.fallback_rows, 0u);
}

TEST(GreedyHead, FallbackGivesTheFullHeadsRow) {
  const std::size_t rows = 500, cols = 64;
  // Rows 16.. repeat rows 0..15: every group is the same, so the best row has an equal in
  // every group and the candidates touch them all.
  const Head h = make_head(rows, cols, 6, 16);
  std::mt19937 rng(7);
  const int n = 6;
  std::vector<float> xs;
  for (int i = 0; i < n; ++i) {
    const std::vector<float> x = hidden(cols, rng, i % 2, false);
    xs.insert(xs.end(), x.begin(), x.end());
  }
  const model::GreedyHeadBounds b = model::make_greedy_head_bounds(h.w, nullptr);
  model::GreedyHead g(h.w, 30.0f, b, n, 1);  // at most one group: every row here falls back
  std::vector<float> out(static_cast<std::size_t>(n) * rows);
  g.run(xs.data(), n, out.data(), nullptr);
  EXPECT_THROW(g.run(xs.data(), n + 1, out.data(), nullptr), Error) << "more rows than it was sized for";
  EXPECT_EQ(g.stats().fallback_rows, static_cast<std::uint64_t>(n));
  const std::vector<float> full = full_head(h.w, xs.data(), n, 30.0f);
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_TRUE(same_bits(out[i], full[i])) << i;
}

TEST(GreedyHead, SoftCapErrorIsWithinTheCheckedBound) {
  // The cap check assumes |computed cap - cap tanh(z / cap)| <= cap * kTanhError for every z.
  for (float cap : {30.0f, 0.05f, 1.0f}) {
    std::vector<float> z;
    for (double v = -8.0 * cap; v <= 8.0 * cap; v += cap / 4096.0) z.push_back(static_cast<float>(v));
    z.push_back(0.0f);
    z.push_back(1e-30f);
    z.push_back(3.0e5f);
    std::vector<float> c = z;
    kernels::soft_cap(c.data(), static_cast<std::int64_t>(c.size()), cap);  // vector lanes and the scalar tail
    for (std::size_t i = 0; i < z.size(); ++i) {
      const long double t = static_cast<long double>(cap) * std::tanh(static_cast<long double>(z[i]) / cap);
      ASSERT_LE(std::fabs(static_cast<long double>(c[i]) - t), cap * model::GreedyHead::kTanhError)
          << "z = " << z[i] << " cap " << cap;
    }
  }
}

TEST(GreedyHead, CandidateScanAndMaximum) {
  std::vector<float> y(100, 0.0f);
  y[3] = 5.0f;
  y[40] = 4.5f;
  y[41] = 4.0f;
  y[99] = 4.9f;
  EXPECT_EQ(kernels::max_value(y.data(), y.size()), 5.0f);
  std::vector<std::int32_t> ids(100);
  std::size_t groups = 0;
  EXPECT_EQ(kernels::collect_candidates(y.data(), y.size(), 4.0f, ids.data(), 10, &groups), 4u);
  EXPECT_EQ(groups, 3u);  // groups 0, 2 and 6
  EXPECT_EQ(std::vector<std::int32_t>(ids.begin(), ids.begin() + 4), (std::vector<std::int32_t>{3, 40, 41, 99}));
  EXPECT_EQ(kernels::collect_candidates(y.data(), y.size(), 4.0f, ids.data(), 2, &groups), SIZE_MAX);
  // With fill: the same candidates, every other value -inf, the candidates' values kept.
  std::vector<float> f = y;
  EXPECT_EQ(kernels::collect_candidates(f.data(), f.size(), 4.0f, ids.data(), 10, &groups, true), 4u);
  for (std::size_t i = 0; i < f.size(); ++i)
    EXPECT_EQ(f[i], y[i] >= 4.0f ? y[i] : -std::numeric_limits<float>::infinity()) << i;
  y[50] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(kernels::max_value(y.data(), y.size())));
}
