#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "util/float16.h"

using namespace ringlm;

// Reference: the exact rounding of a double onto the fp16 grid, computed by brute force
// over the neighbouring representable values (ties to even).
static std::uint16_t reference_fp16(float f) {
  if (std::isnan(f)) return 0x7e00;
  std::uint16_t best = 0;
  double best_err = INFINITY;
  for (std::uint32_t h = 0; h < 0x7c00; ++h) {
    double v = fp16_to_f32(static_cast<std::uint16_t>(h));
    double err = std::fabs(v - std::fabs(static_cast<double>(f)));
    if (err < best_err || (err == best_err && (h & 1) == 0)) {
      best_err = err;
      best = static_cast<std::uint16_t>(h);
    }
  }
  // Values at or past 65520 round to infinity.
  if (std::fabs(static_cast<double>(f)) >= 65520.0) best = 0x7c00;
  return static_cast<std::uint16_t>(best | (std::signbit(f) ? 0x8000 : 0));
}

TEST(Float16, Fp16RoundTripsEveryFiniteValue) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN payloads
    EXPECT_EQ(f32_to_fp16(fp16_to_f32(static_cast<std::uint16_t>(h))), h) << h;
  }
}

TEST(Float16, Fp16RoundingMatchesBruteForce) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> exp(-26.0f, 17.0f);
  for (int i = 0; i < 300; ++i) {
    float f = std::ldexp(1.0f + std::uniform_real_distribution<float>(0, 1)(rng), static_cast<int>(exp(rng)));
    if (i & 1) f = -f;
    EXPECT_EQ(f32_to_fp16(f), reference_fp16(f)) << f;
  }
}

TEST(Float16, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3f808001u)), 0x3f81);
  EXPECT_EQ(bf16_to_f32(0xc000), -2.0f);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}
