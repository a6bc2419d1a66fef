#include "kernels/ref_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "util/float16.h"


namespace ringlm::kernels {

void rms_norm(const float* x, const float* weight, int n, float eps, float* y) {
  double ss = 0.0;  // double: the sum of squares of a wide row loses bits in float
  for (int i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(ss / n + eps));
  if (weight) {
    for (int i = 0; i < n; ++i) y[i] = x[i] * inv * weight[i];
  } else {
    for (int i = 0; i < n; ++i) y[i] = x[i] * inv;
  }
}

void rms_norm_rows(const float* x, std::size_t x_stride, const float* weight, int n, float eps, float* y,
                   std::size_t y_stride, int count) {
  int r = 0;
  for (; r + 4 <= count; r += 4) {
    const float* x0 = x + static_cast<std::size_t>(r) * x_stride;
    const float* x1 = x0 + x_stride;
    const float* x2 = x1 + x_stride;
    const float* x3 = x2 + x_stride;
    // Each sum exactly as rms_norm forms it: squares exact in double, added in index order.
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (int i = 0; i < n; ++i) {
      s0 += static_cast<double>(x0[i]) * x0[i];
      s1 += static_cast<double>(x1[i]) * x1[i];
      s2 += static_cast<double>(x2[i]) * x2[i];
      s3 += static_cast<double>(x3[i]) * x3[i];
    }
    const double ss[4] = {s0, s1, s2, s3};
    for (int k = 0; k < 4; ++k) {
      const float* xr = x0 + static_cast<std::size_t>(k) * x_stride;
      float* yr = y + static_cast<std::size_t>(r + k) * y_stride;
      const float inv = static_cast<float>(1.0 / std::sqrt(ss[k] / n + eps));
      if (weight) {
        for (int i = 0; i < n; ++i) yr[i] = xr[i] * inv * weight[i];
      } else {
        for (int i = 0; i < n; ++i) yr[i] = xr[i] * inv;
      }
    }
  }
  for (; r < count; ++r)
    rms_norm(x + static_cast<std::size_t>(r) * x_stride, weight, n, eps, y + static_cast<std::size_t>(r) * y_stride);
}

void rope_angles(const double* inv_freq, int half_dim, std::int64_t pos, float* cos_sin) {
  for (int i = 0; i < half_dim; ++i) {
    // Angle in double: pos * inv_freq reaches 1e5 rad, where float loses the phase.
    const double a = static_cast<double>(pos) * inv_freq[i];
    cos_sin[i] = static_cast<float>(std::cos(a));
    cos_sin[half_dim + i] = static_cast<float>(std::sin(a));
  }
}

void rope_apply(float* x, int d, const float* cos_sin) {
  const int h = d / 2;
  const float* c = cos_sin;
  const float* s = cos_sin + h;
  for (int i = 0; i < h; ++i) {
    const float a = x[i], b = x[i + h];
    x[i] = a * c[i] - b * s[i];
    x[i + h] = b * c[i] + a * s[i];
  }
}

void add_inplace(float* y, const float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void scale_inplace(float* y, std::int64_t n, float s) {
  for (std::int64_t i = 0; i < n; ++i) y[i] *= s;
}

namespace {
inline float dot(const float* a, const float* b, int n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  float total = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; i < n; ++i) total += a[i] * b[i];
  return total;
}
// The reference's own f16 widening (scalar, exact), independent of the kernels' SIMD one.
inline void widen_f16(const std::uint16_t* h, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = fp16_to_f32(h[i]);
}
}  // namespace

std::size_t attend_scratch_floats(int n_heads, const KvSlots& kv) {
  const int group = n_heads / std::max(1, kv.n_kv_heads);
  // An f16 cache also needs one widened K row and one V row after the scores.
  const std::size_t widen = kv.type == KvType::f16 ? 2 * static_cast<std::size_t>(std::max(0, kv.head_dim)) : 0;
  return static_cast<std::size_t>(std::max(1, group)) * static_cast<std::size_t>(std::max(0, kv.n_slots)) + widen;
}

void attend_heads(const float* q, int n_heads, int head_begin, int head_end, std::int64_t q_pos,
                  const KvSlots& kv, int window, float scale, float* scores, float* out) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  constexpr int kMaxGroup = 64;
  const int d = kv.head_dim;
  const int group = n_heads / kv.n_kv_heads;
  const std::int64_t stride = static_cast<std::int64_t>(kv.n_kv_heads) * d;
  const std::int64_t n_slots = kv.n_slots;
  const bool half = kv.type == KvType::f16;
  // f16 only (an f32 cache with no slots may pass an empty, null scratch).
  float* k_wide = half ? scores + static_cast<std::int64_t>(std::max(1, group)) * n_slots : nullptr;
  float* v_wide = half ? k_wide + d : nullptr;
  for (int h0 = head_begin; h0 < head_end;) {
    // The run of heads [h0, h1) that read the same KV head g.
    const int g = h0 / group;
    const int h1 = std::min({head_end, (g + 1) * group, h0 + kMaxGroup});
    const int nh = h1 - h0;
    float max_score[kMaxGroup];
    for (int j = 0; j < nh; ++j) max_score[j] = kNegInf;
    for (std::int64_t s = 0; s < n_slots; ++s) {
      const std::int64_t p = kv.pos[s];
      const bool visible = p >= 0 && p <= q_pos && (window <= 0 || q_pos - p < window);
      const float* ks = half ? nullptr : kv.k + s * stride + static_cast<std::int64_t>(g) * d;
      if (half && visible) {
        widen_f16(kv.k16 + s * stride + static_cast<std::int64_t>(g) * d, d, k_wide);
        ks = k_wide;
      }
      for (int j = 0; j < nh; ++j) {
        float& sc = scores[j * n_slots + s];
        if (!visible) {
          sc = kNegInf;
          continue;
        }
        sc = scale * dot(q + static_cast<std::int64_t>(h0 + j) * d, ks, d);
        if (sc > max_score[j]) max_score[j] = sc;
      }
    }
    double denom[kMaxGroup];
    for (int j = 0; j < nh; ++j) {
      denom[j] = 0.0;
      float* oh = out + static_cast<std::int64_t>(h0 + j) * d;
      for (int i = 0; i < d; ++i) oh[i] = 0.0f;
    }
    for (std::int64_t s = 0; s < n_slots; ++s) {
      const float* vs = half ? v_wide : kv.v + s * stride + static_cast<std::int64_t>(g) * d;
      if (half) widen_f16(kv.v16 + s * stride + static_cast<std::int64_t>(g) * d, d, v_wide);
      for (int j = 0; j < nh; ++j) {
        const float sc = scores[j * n_slots + s];
        if (sc == kNegInf) continue;  // also skips every slot of a head that sees nothing
        const float w = std::exp(sc - max_score[j]);
        denom[j] += w;
        float* oh = out + static_cast<std::int64_t>(h0 + j) * d;
        for (int i = 0; i < d; ++i) oh[i] += w * vs[i];
      }
    }
    for (int j = 0; j < nh; ++j) {
      if (max_score[j] == kNegInf) continue;  // nothing visible: output stays zero
      float* oh = out + static_cast<std::int64_t>(h0 + j) * d;
      const float inv = static_cast<float>(1.0 / denom[j]);
      for (int i = 0; i < d; ++i) oh[i] *= inv;
    }
    h0 = h1;
  }
}

void attend_one(const float* q, int n_heads, std::int64_t q_pos, const KvSlots& kv, int window, float scale,
                float* scores, float* out) {
  attend_heads(q, n_heads, 0, n_heads, q_pos, kv, window, scale, scores, out);
}

}  // namespace ringlm::kernels
