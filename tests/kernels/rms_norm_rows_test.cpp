// kernels::rms_norm_rows (four rows' sums of squares side by side, used by the forward pass's
// pooled row loops) against rms_norm row by row: the same bits, for every row count around the
// four-row step, with and without a weight, strided and in place; and both against float64.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/ref_ops.h"

namespace ringlm::kernels {
namespace {

TEST(RmsNormRows, BitIdenticalToRmsNormRowByRowAndCloseToFloat64) {
  std::mt19937 rng(20261207);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float eps = 1e-6f;
  for (int n : {1, 7, 256, 1536}) {
    for (int count : {0, 1, 3, 4, 5, 8, 9}) {
      for (bool with_weight : {false, true}) {
        const std::size_t xs = static_cast<std::size_t>(n) + 5, ys = static_cast<std::size_t>(n) + 3;
        std::vector<float> x(xs * static_cast<std::size_t>(count) + 1), w(static_cast<std::size_t>(n));
        // Rows of very different scales, so each row's own sum matters.
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * std::exp2(static_cast<float>(i % 13) - 6.0f);
        for (float& v : w) v = 1.0f + 0.5f * normal(rng);
        const float* wp = with_weight ? w.data() : nullptr;

        std::vector<float> want(ys * static_cast<std::size_t>(count), -1.0f), got(want);
        for (int r = 0; r < count; ++r) rms_norm(x.data() + r * xs, wp, n, eps, want.data() + r * ys);
        rms_norm_rows(x.data(), xs, wp, n, eps, got.data(), ys, count);
        // (memcmp of no rows would pass the empty vectors' null pointers: undefined even for 0 bytes.)
        EXPECT_TRUE(want.empty() || std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0)
            << "n " << n << " count " << count << " weight " << with_weight;

        // In place (y == x, same stride): the same bits again.
        std::vector<float> inplace(x);
        rms_norm_rows(inplace.data(), xs, wp, n, eps, inplace.data(), xs, count);
        for (int r = 0; r < count; ++r)
          ASSERT_EQ(std::memcmp(inplace.data() + r * xs, want.data() + r * ys, static_cast<std::size_t>(n) * sizeof(float)),
                    0)
              << "in place, n " << n << " row " << r;

        // float64 reference of the definition.
        for (int r = 0; r < count; ++r) {
          const float* xr = x.data() + r * xs;
          long double ss = 0.0L;
          for (int i = 0; i < n; ++i) ss += static_cast<long double>(xr[i]) * xr[i];
          const double inv = 1.0 / std::sqrt(static_cast<double>(ss) / n + eps);
          for (int i = 0; i < n; ++i) {
            const double ref = static_cast<double>(xr[i]) * inv * (wp ? wp[i] : 1.0);
            ASSERT_NEAR(got[r * ys + i], ref, 1e-6 * std::fabs(ref) + 1e-30) << "n " << n << " row " << r << " i " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ringlm::kernels
