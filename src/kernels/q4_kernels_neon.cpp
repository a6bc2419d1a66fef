// aarch64 Advanced SIMD kernels (baseline ARMv8.0, no dot-product extension, so they run on
// every aarch64 CPU). Same packed layout: a 128-bit register holds 4 rows x 4 bytes of a
// 64-byte line. The codes are made signed (c - 8) first, so no bias term is needed;
// vmull_s8 + vpaddq_s16 give per-row pair sums, eight steps summed in int16 (|sum| <=
// 8 * 2 * 8 * 127 = 16256), then widened once per block.
#include <cstring>

#include "kernels/kernel_table.h"

#if defined(__aarch64__)
#include <arm_neon.h>

namespace {

using namespace ringlm::kernels;

inline int8x16_t bcast4(const std::int8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// Products of 4 rows' 4 signed codes with the 4 broadcast activation bytes, pair-summed:
// int16 lanes (2r, 2r+1) belong to row r.
inline int16x8_t quad_step(int8x16_t codes, int8x16_t a4) {
  const int16x8_t p01 = vmull_s8(vget_low_s8(codes), vget_low_s8(a4));
  const int16x8_t p23 = vmull_high_s8(codes, a4);
  return vpaddq_s16(p01, p23);
}

void q4_matmul_groups_neon(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                           std::size_t ldy) {
  const std::size_t nb = w.blocks_per_row();
  const uint8x16_t mask = vdupq_n_u8(0x0f);
  const int8x16_t eight = vdupq_n_s8(8);
  for (std::size_t g = g0; g < g1; ++g) {
    const std::uint8_t* codes = w.group_codes(g);
    const std::uint16_t* scales = w.group_scales(g);
    for (std::size_t m = 0; m < x.rows; ++m) {
      float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
      for (std::size_t b = 0; b < nb; ++b) {
        const std::int8_t* a = x.qs + m * x.cols + b * 32;
        const std::int8_t* a2 = x.qs2 != nullptr ? x.qs2 + m * x.cols + b * 32 : nullptr;
        const float xd = a2 != nullptr ? x.d2[m * nb + b] : x.d[m * nb + b];
        for (int h = 0; h < 4; ++h) {  // rows 4h .. 4h+3 of the group
          int16x8_t s = vdupq_n_s16(0), s2 = vdupq_n_s16(0);
          for (int t = 0; t < 4; ++t) {
            const uint8x16_t c = vld1q_u8(codes + b * 256 + 64 * t + 16 * h);
            const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(c, mask)), eight);
            const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(c, 4)), eight);
            s = vaddq_s16(s, quad_step(lo, bcast4(a + 4 * t)));
            s = vaddq_s16(s, quad_step(hi, bcast4(a + 16 + 4 * t)));
            if (a2 != nullptr) {
              s2 = vaddq_s16(s2, quad_step(lo, bcast4(a2 + 4 * t)));
              s2 = vaddq_s16(s2, quad_step(hi, bcast4(a2 + 16 + 4 * t)));
            }
          }
          int32x4_t s32 = vpaddlq_s16(s);
          // Two planes: 254 * plane 1 + plane 2 (codes are signed here, so no bias terms).
          if (a2 != nullptr) s32 = vmlaq_n_s32(vpaddlq_s16(s2), s32, 254);
          const float32x4_t ws =
              vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(scales + b * kQ4GroupRows + 4 * h)));
          acc[h] = vfmaq_f32(acc[h], vmulq_f32(vcvtq_f32_s32(s32), ws), vdupq_n_f32(xd));
        }
      }
      const std::size_t n0 = g * kQ4GroupRows;
      const std::size_t valid = w.rows - n0 < kQ4GroupRows ? w.rows - n0 : kQ4GroupRows;
      float tmp[16];
      for (int h = 0; h < 4; ++h) vst1q_f32(tmp + 4 * h, acc[h]);
      std::memcpy(y + m * ldy + n0, tmp, valid * sizeof(float));
    }
  }
}

}  // namespace

namespace ringlm::kernels {

void quantize_act_row_neon(const float* x, std::size_t cols, std::int8_t* qs, float* d, std::int32_t* bias,
                           std::int8_t* qs2, float* d2, std::int32_t* bias2) {
  for (std::size_t b = 0; b < cols / 32; ++b) {
    float32x4_t v[8];
    float32x4_t mx = vdupq_n_f32(0);
    for (int i = 0; i < 8; ++i) {
      v[i] = vld1q_f32(x + b * 32 + 4 * i);
      mx = vmaxq_f32(mx, vabsq_f32(v[i]));
    }
    const float amax = vmaxvq_f32(mx);
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    std::int32_t sum = 0, sum2 = 0;
    for (int i = 0; i < 8; i += 2) {
      // vcvtnq: round to nearest, ties to even, as std::nearbyint in the reference.
      const float32x4_t t0 = vmulq_n_f32(v[i], id), t1 = vmulq_n_f32(v[i + 1], id);
      const int32x4_t q0 = vcvtnq_s32_f32(t0);
      const int32x4_t q1 = vcvtnq_s32_f32(t1);
      sum += vaddvq_s32(vaddq_s32(q0, q1));
      vst1_s8(qs + b * 32 + 4 * i, vqmovn_s16(vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1))));
      if (qs2 != nullptr) {
        const int32x4_t r0 = vcvtnq_s32_f32(vmulq_n_f32(vsubq_f32(t0, vcvtq_f32_s32(q0)), 254.0f));
        const int32x4_t r1 = vcvtnq_s32_f32(vmulq_n_f32(vsubq_f32(t1, vcvtq_f32_s32(q1)), 254.0f));
        sum2 += vaddvq_s32(vaddq_s32(r0, r1));
        vst1_s8(qs2 + b * 32 + 4 * i, vqmovn_s16(vcombine_s16(vqmovn_s32(r0), vqmovn_s32(r1))));
      }
    }
    d[b] = db;
    bias[b] = -8 * sum;
    if (qs2 != nullptr) {
      d2[b] = db / 254.0f;
      bias2[b] = -8 * sum2;
    }
  }
}

void i8_gemv_f32_neon(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0, std::size_t r1,
                      const float* x, float* y) {
  if (cols % 8 != 0) return kScalarKernels.i8_gemv_f32(w, scale, cols, r0, r1, x, y);
  for (std::size_t n = r0; n < r1; ++n) {
    const std::int8_t* row = w + n * cols;
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);
    for (std::size_t k = 0; k < cols; k += 8) {
      const int16x8_t w16 = vmovl_s8(vld1_s8(row + k));
      acc0 = vfmaq_f32(acc0, vcvtq_f32_s32(vmovl_s16(vget_low_s16(w16))), vld1q_f32(x + k));
      acc1 = vfmaq_f32(acc1, vcvtq_f32_s32(vmovl_high_s16(w16)), vld1q_f32(x + k + 4));
    }
    y[n] = scale[n] * vaddvq_f32(vaddq_f32(acc0, acc1));
  }
}

}  // namespace ringlm::kernels

namespace {

using namespace ringlm::kernels;

// Lane j of the int32 partial sums holds bytes 4j..4j+3 of each 16 (products pair-summed
// twice, |pair| <= 2 * 128 * 127 fits int16), the same lanes sdot fills, so the
// neon-dotprod path gives bit-identical results.
void i8_gemv_q8_neon(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0, std::size_t r1,
                     const Q8ActView& x, float* y) {
  for (std::size_t n = r0; n < r1; ++n) {
    const std::int8_t* row = w + n * cols;
    float32x4_t acc = vdupq_n_f32(0);
    for (std::size_t b = 0; b < cols / 32; ++b) {
      int32x4_t s = vdupq_n_s32(0);
      for (int h = 0; h < 2; ++h) {
        const int8x16_t wv = vld1q_s8(row + b * 32 + 16 * h);
        const int8x16_t av = vld1q_s8(x.qs + b * 32 + 16 * h);
        s = vpadalq_s16(s, vpaddq_s16(vmull_s8(vget_low_s8(wv), vget_low_s8(av)), vmull_high_s8(wv, av)));
      }
      acc = vfmaq_n_f32(acc, vcvtq_f32_s32(s), x.d[b]);
    }
    y[n] = scale[n] * vaddvq_f32(acc);
  }
}

}  // namespace

namespace ringlm::kernels {
const KernelTable kNeonKernels = {
    quantize_act_row_neon,
    q4_matmul_groups_neon,
    i8_gemv_f32_neon,
    i8_gemv_q8_neon,
    gelu_mul_scalar,
    soft_cap_scalar,
    nullptr,  // prepack_act: rows read in place
};
}  // namespace ringlm::kernels
#endif
