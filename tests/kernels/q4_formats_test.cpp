// q4_0 / q8_0 / int8-row quantizers: ggml's rounding rules, checked on hand-made and random
// blocks against a float64 restatement of the rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/q4_formats.h"
#include "test_support.h"
#include "util/float16.h"

namespace ringlm::kernels {
namespace {

TEST(Q4Formats, LargestMagnitudeMapsToCodeZeroAndKeepsItsSign) {
  std::vector<float> x(32, 0.0f);
  x[3] = 2.0f;
  x[20] = -4.0f;  // largest magnitude, negative: d = -4 / -8 = 0.5
  x[7] = 1.0f;
  BlockQ4_0 b;
  quantize_row_q4_0_ref(x.data(), &b, 32);
  EXPECT_EQ(fp16_to_f32(b.d), 0.5f);
  EXPECT_EQ(b.qs[20 - 16] >> 4, 0);          // -4 / 0.5 = -8 -> code 0
  EXPECT_EQ(b.qs[3] & 0x0f, 12);              // 2 / 0.5 = 4 -> code 12
  EXPECT_EQ(b.qs[7] & 0x0f, 10);
  EXPECT_EQ(b.qs[0] & 0x0f, 8);               // zero -> code 8
  std::vector<float> back(32);
  dequantize_row_q4_0(&b, back.data(), 32);
  EXPECT_EQ(back[20], -4.0f);
  EXPECT_EQ(back[3], 2.0f);
}

TEST(Q4Formats, PositiveMaximumClampsTheOppositeEndTo15AndFirstTieWins) {
  std::vector<float> x(32, 0.0f);
  x[0] = 8.0f;    // first of two equal magnitudes: d = 8 / -8 = -1
  x[1] = -8.0f;   // maps to -8 / -1 = +8 -> 16.5 truncated 16 -> clamped to 15
  x[2] = 2.5f;    // 2.5 / -1 = -2.5 -> 6.0 -> code 6 (half rounds up: -2.5 -> -2 is 6)
  x[3] = -2.5f;   // +2.5 -> 11.0 -> code 11
  BlockQ4_0 b;
  quantize_row_q4_0_ref(x.data(), &b, 32);
  EXPECT_EQ(fp16_to_f32(b.d), -1.0f);
  EXPECT_EQ(b.qs[0] & 0x0f, 0);
  EXPECT_EQ(b.qs[1] & 0x0f, 15);
  EXPECT_EQ(b.qs[2] & 0x0f, 6);
  EXPECT_EQ(b.qs[3] & 0x0f, 11);
}

// ggml computes d = 0 / -8 = -0.0, so a zero block stores the fp16 bits of -0 (0x8000).
TEST(Q4Formats, ZeroBlockHasNegativeZeroScaleAndCode8) {
  std::vector<float> x(64, 0.0f);
  BlockQ4_0 b[2];
  quantize_row_q4_0_ref(x.data(), b, 64);
  for (const auto& blk : b) {
    EXPECT_EQ(blk.d, 0x8000);
    for (auto q : blk.qs) EXPECT_EQ(q, 0x88);
  }
}

// Restates ggml's rule in float64 (except the steps ggml does in float32, which we mirror)
// and compares codes and scales on random blocks of varied magnitude.
TEST(Q4Formats, RandomBlocksMatchTheRuleAndErrorIsBoundedByHalfAStep) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const std::size_t k = 32 * 256;
  std::vector<float> x(k);
  for (std::size_t i = 0; i < k; ++i) x[i] = n(rng) * std::pow(10.0f, float(int(i / 32 % 9) - 4));
  std::vector<BlockQ4_0> b(k / 32);
  quantize_row_q4_0_ref(x.data(), b.data(), k);
  std::vector<float> back(k);
  dequantize_row_q4_0(b.data(), back.data(), k);
  for (std::size_t blk = 0; blk < k / 32; ++blk) {
    int arg = 0;
    for (int j = 1; j < 32; ++j)
      if (std::fabs(x[blk * 32 + j]) > std::fabs(x[blk * 32 + arg])) arg = j;
    const float d = x[blk * 32 + arg] / -8.0f;
    ASSERT_EQ(b[blk].d, f32_to_fp16(d));
    for (int j = 0; j < 32; ++j) {
      const int code = j < 16 ? (b[blk].qs[j] & 0x0f) : (b[blk].qs[j - 16] >> 4);
      const double v = double(x[blk * 32 + j]) / double(d);  // in [-8, 8]
      const int expect = std::min(15, int(std::floor(v + 8.5)));
      // float32 evaluation of x*id may land on the other side of a .5 boundary: allow 1.
      ASSERT_LE(std::abs(code - expect), 1) << "block " << blk << " elem " << j;
      if (code != 15) {
        ASSERT_LE(std::fabs(double(back[blk * 32 + j]) - double(x[blk * 32 + j])),
                  0.5 * std::fabs(double(fp16_to_f32(b[blk].d))) * 1.01 + 1e-6 * std::fabs(d));
      }
    }
  }
}

TEST(Q8Formats, RoundTripWithinHalfAStep) {
  std::mt19937 rng(99);
  std::normal_distribution<float> n(0.0f, 3.0f);
  std::vector<float> x(32 * 64), back(x.size());
  for (auto& v : x) v = n(rng);
  std::vector<BlockQ8_0> b(x.size() / 32);
  quantize_row_q8_0_ref(x.data(), b.data(), x.size());
  dequantize_row_q8_0(b.data(), back.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    // Codes use the f32 step, dequantization the fp16-rounded one (relative error <= 2^-11):
    // up to 127 * step * 2^-11 on top of half a step.
    const double step = fp16_to_f32(b[i / 32].d);
    ASSERT_LE(std::fabs(double(back[i]) - x[i]), 0.5 * step + 127.0 * step / 2048.0 * 1.01) << i;
  }
}

TEST(I8Rows, ScaleIsAmaxOver127AndCodesRoundToNearest) {
  std::vector<float> x = {0.0f, 1.0f, -2.54f, 0.01f, 2.0f, -0.5f, 0.3f, 0.02f};
  std::vector<std::int8_t> q(x.size());
  const float scale = quantize_row_i8(x.data(), q.data(), x.size());
  EXPECT_FLOAT_EQ(scale, 2.54f / 127.0f);
  EXPECT_EQ(q[2], -127);
  EXPECT_EQ(q[1], 50);
  EXPECT_EQ(q[0], 0);
  std::vector<float> back(x.size());
  dequantize_row_i8(q.data(), scale, back.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(back[i], x[i], 0.5 * scale * 1.001);
  std::vector<float> zeros(16, 0.0f);
  std::vector<std::int8_t> qz(16, 5);
  EXPECT_EQ(quantize_row_i8(zeros.data(), qz.data(), 16), 0.0f);
  for (auto v : qz) EXPECT_EQ(v, 0);
}

}  // namespace
}  // namespace ringlm::kernels

using namespace ringlm::kernels;

// quantize_row_q4_0_fast on every ISA path gives the reference's bytes: random rows with
// blocks built to hit the corner cases (ties between +m and -m, repeated maxima, all-zero
// and signed-zero blocks, tiny and huge magnitudes, exact .5 boundaries of x * id + 8.5).
TEST(Q4Formats, FastQuantizerIsBitIdenticalToTheReferenceOnEveryPath) {
  ringlm::kernels::testing::IsaGuard guard;
  std::mt19937 rng(77);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const std::size_t cols = 32 * 64;
  std::vector<float> x(cols * 8);
  for (std::size_t b = 0; b < x.size() / 32; ++b) {
    float* xb = x.data() + b * 32;
    const float scale = std::ldexp(1.0f, static_cast<int>(b % 40) - 20);
    for (int j = 0; j < 32; ++j) xb[j] = scale * nd(rng);
    switch (b % 7) {
      case 0: xb[5] = 3 * scale; xb[9] = -3 * scale; break;                // tie: the first (+) wins
      case 1: xb[3] = -2 * scale; xb[30] = -2 * scale; xb[31] = 2 * scale; break;
      case 2: for (int j = 0; j < 32; ++j) xb[j] = 0.0f; break;
      case 3: for (int j = 0; j < 32; ++j) xb[j] = (j % 2) ? -0.0f : 0.0f; break;
      case 4: for (int j = 0; j < 32; ++j) xb[j] = scale * static_cast<float>(j - 16) / 2; break;  // .5 steps
      default: break;
    }
  }
  const std::size_t nb = x.size() / 32;
  std::vector<BlockQ4_0> want(nb), got(nb);
  quantize_row_q4_0_ref(x.data(), want.data(), x.size());
  for (Isa isa : available_isas()) {
    force_isa(isa);
    std::fill(got.begin(), got.end(), BlockQ4_0{});
    quantize_row_q4_0_fast(x.data(), got.data(), x.size());
    for (std::size_t b = 0; b < nb; ++b) {
      ASSERT_EQ(got[b].d, want[b].d) << isa_name(isa) << " block " << b;
      ASSERT_EQ(0, std::memcmp(got[b].qs, want[b].qs, sizeof want[b].qs)) << isa_name(isa) << " block " << b;
    }
  }
}
