#include "kernels/greedy_head.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "util/float16.h"

namespace ringlm::kernels {

namespace {
constexpr double kU = 1.0 / 16777216.0;  // 2^-24, float's unit roundoff
constexpr double kUp = 1.0 + 1e-12;      // rounds a double-computed bound up (double error ~1e-16 per step)
}  // namespace

void q4_head_bounds(const Q4Packed& w, double* n_b, Q4HeadBounds* out, ParallelFor* pool) {
  const std::size_t nb = w.blocks_per_row(), groups = w.groups();
  const int slices = pool ? std::max(1, pool->size()) : 1;
  // Per slice: its own maxima (no sharing between threads), merged after.
  std::vector<double> part(static_cast<std::size_t>(slices) * (nb + 1), 0.0);
  // Slice s takes groups [s G / S, (s+1) G / S) and keeps its own maxima, merged after.
  auto slice = [&](std::size_t s) {
    double* mine = part.data() + s * (nb + 1);
    const std::size_t g0 = s * groups / static_cast<std::size_t>(slices);
    const std::size_t g1 = (s + 1) * groups / static_cast<std::size_t>(slices);
    for (std::size_t g = g0; g < g1; ++g) {
      const std::uint8_t* codes = w.group_codes(g);
      const std::uint16_t* scales = w.group_scales(g);
      double sq[kQ4GroupRows] = {};
      for (std::size_t b = 0; b < nb; ++b) {
        int abs_sum[kQ4GroupRows] = {}, sq_sum[kQ4GroupRows] = {};
        for (std::size_t t = 0; t < 4; ++t)
          for (std::size_t r = 0; r < kQ4GroupRows; ++r)
            for (std::size_t k = 0; k < 4; ++k) {
              const std::uint8_t byte = codes[b * 256 + t * 64 + r * 4 + k];
              const int lo = (byte & 0x0f) - 8, hi = (byte >> 4) - 8;
              abs_sum[r] += std::abs(lo) + std::abs(hi);
              sq_sum[r] += lo * lo + hi * hi;
            }
        for (std::size_t r = 0; r < kQ4GroupRows; ++r) {
          const double d = std::fabs(static_cast<double>(fp16_to_f32(scales[b * 16 + r])));
          mine[b] = std::max(mine[b], d * abs_sum[r]);  // exact: an fp16 value times an integer < 2^9
          sq[r] += d * d * sq_sum[r];
        }
      }
      for (std::size_t r = 0; r < kQ4GroupRows; ++r) mine[nb] = std::max(mine[nb], sq[r]);
    }
  };
  if (pool && slices > 1)
    pool->run(slices, [&](std::int64_t s0, std::int64_t s1) {
      for (std::int64_t s = s0; s < s1; ++s) slice(static_cast<std::size_t>(s));
    });
  else
    slice(0);
  double norm2 = 0.0;
  for (std::size_t b = 0; b <= nb; ++b) {
    double m = 0.0;
    for (int s = 0; s < slices; ++s) m = std::max(m, part[static_cast<std::size_t>(s) * (nb + 1) + b]);
    if (b < nb) n_b[b] = m * kUp;
    else norm2 = m;
  }
  out->row_norm_max = std::sqrt(norm2 * kUp) * kUp;
}

double one_plane_error_bound(const float* x, std::size_t cols, const double* n_b, const Q4HeadBounds& bounds) {
  const std::size_t nb = cols / 32;
  double l1 = 0.0, s = 0.0, r2 = 0.0;
  for (std::size_t b = 0; b < nb; ++b) {
    const float* xb = x + b * 32;
    float amax = 0.0f;
    for (std::size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    if (!std::isfinite(amax)) return std::numeric_limits<double>::infinity();
    // The quantizer's own steps (quantize_act_row_ref), so q2 below is the kernel's code.
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    const float d2 = db / 254.0f;
    double q2sq = 0.0;
    for (std::size_t j = 0; j < 32; ++j) {
      const float t = xb[j] * id;
      const float qf = std::nearbyint(t);
      const float q2 = std::nearbyint((t - qf) * 254.0f);
      q2sq += static_cast<double>(q2) * q2;
    }
    l1 += static_cast<double>(db) * 0.5 * n_b[b];
    s += static_cast<double>(amax) * n_b[b];
    r2 += static_cast<double>(d2) * d2 * q2sq;
  }
  const double l1_bound = l1 * (1.0 + 2 * kU) * kUp;
  const double cs_bound = bounds.row_norm_max * std::sqrt(r2 * kUp) * kUp;
  const double slack = (8.0 * static_cast<double>(nb) + 64.0) * kU * s * kUp;
  return (std::min(l1_bound, cs_bound) + slack) * kUp;
}

float max_value(const float* y, std::size_t n) {
  // Eight independent lanes (the compiler vectorises them); NaN is checked separately, since
  // std::max would skip it.
  float m[8];
  std::fill(m, m + 8, -std::numeric_limits<float>::infinity());
  bool nan = false;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t k = 0; k < 8; ++k) {
      const float v = y[i + k];
      nan |= v != v;
      m[k] = v > m[k] ? v : m[k];
    }
  for (; i < n; ++i) {
    nan |= y[i] != y[i];
    m[0] = y[i] > m[0] ? y[i] : m[0];
  }
  if (nan) return std::numeric_limits<float>::quiet_NaN();
  return *std::max_element(m, m + 8);
}

std::size_t collect_candidates(float* y, std::size_t n, float t, std::int32_t* ids, std::size_t max_groups,
                               std::size_t* groups, bool fill) {
  std::size_t count = 0, touched = 0;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // Whole groups at a time: a group without a candidate (the common case) costs one
  // vectorisable comparison pass (with fill, the -inf store rides along).
  for (std::size_t g0 = 0; g0 < n; g0 += kQ4GroupRows) {
    const std::size_t g1 = std::min(n, g0 + kQ4GroupRows);
    bool any = false;
    if (fill) {
      for (std::size_t i = g0; i < g1; ++i) {
        const bool c = y[i] >= t;
        any |= c;
        if (!c) y[i] = kNegInf;  // candidates keep their value until the caller overwrites it
      }
    } else {
      for (std::size_t i = g0; i < g1; ++i) any |= y[i] >= t;
    }
    if (!any) continue;
    if (++touched > max_groups) return SIZE_MAX;  // before writing: ids holds max_groups groups
    for (std::size_t i = g0; i < g1; ++i)
      if (y[i] >= t) ids[count++] = static_cast<std::int32_t>(i);  // a filled -inf is never >= t (t is finite)
  }
  *groups = touched;
  return count;
}

}  // namespace ringlm::kernels
