// Scalar reference (de)quantization of the ggml block formats (layouts in dequant_blocks.h).
#include "kernels/dequant_ggml.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/q4_formats.h"
#include "util/error.h"
#include "util/float16.h"

namespace ringlm::kernels {

BlockFormat block_format(io::DType t) {
  switch (t) {
    case io::DType::F32: return {1, 4};
    case io::DType::F16: return {1, 2};
    case io::DType::BF16: return {1, 2};
    case io::DType::I8: return {1, 1};
    case io::DType::Q8_0: return {kQK, sizeof(BlockQ8_0)};
    case io::DType::Q4_0: return {kQK, sizeof(BlockQ4_0)};
    case io::DType::Q4_1: return {kQK, sizeof(BlockQ4_1)};
    case io::DType::Q4_K: return {kQKK, sizeof(BlockQ4_K)};
    case io::DType::Q5_K: return {kQKK, sizeof(BlockQ5_K)};
    case io::DType::Q6_K: return {kQKK, sizeof(BlockQ6_K)};
    case io::DType::Q5_0: return {kQK, sizeof(BlockQ5_0)};
    case io::DType::Q5_1: return {kQK, sizeof(BlockQ5_1)};
    case io::DType::Q2_K: return {kQKK, sizeof(BlockQ2_K)};
    case io::DType::Q3_K: return {kQKK, sizeof(BlockQ3_K)};
    case io::DType::IQ4_NL: return {kQK, sizeof(BlockIQ4_NL)};
    case io::DType::IQ4_XS: return {kQKK, sizeof(BlockIQ4_XS)};
    case io::DType::IQ2_XXS: return {kQKK, sizeof(BlockIQ2_XXS)};
    case io::DType::IQ2_XS: return {kQKK, sizeof(BlockIQ2_XS)};
    case io::DType::IQ2_S: return {kQKK, sizeof(BlockIQ2_S)};
    case io::DType::IQ3_XXS: return {kQKK, sizeof(BlockIQ3_XXS)};
    case io::DType::IQ3_S: return {kQKK, sizeof(BlockIQ3_S)};
    case io::DType::IQ1_S: return {kQKK, sizeof(BlockIQ1_S)};
    case io::DType::IQ1_M: return {kQKK, sizeof(BlockIQ1_M)};
  }
  fail("block_format: unknown dtype ", static_cast<int>(t));
}

// ---------------------------------------------------------------------------------------
// Dequantization

void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(src[b].d);
    for (int i = 0; i < kQK; ++i) dst[i] = d * static_cast<float>(src[b].qs[i]);
    dst += kQK;
  }
}

void dequantize_row_q4_0(const BlockQ4_0* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(src[b].d);
    for (int i = 0; i < kQK / 2; ++i) {
      dst[i] = d * static_cast<float>((src[b].qs[i] & 0x0f) - 8);
      dst[i + kQK / 2] = d * static_cast<float>((src[b].qs[i] >> 4) - 8);
    }
    dst += kQK;
  }
}

void dequantize_row_q4_1(const BlockQ4_1* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(src[b].d);
    const float m = fp16_to_f32(src[b].m);
    for (int i = 0; i < kQK / 2; ++i) {
      dst[i] = d * static_cast<float>(src[b].qs[i] & 0x0f) + m;
      dst[i + kQK / 2] = d * static_cast<float>(src[b].qs[i] >> 4) + m;
    }
    dst += kQK;
  }
}

void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b) {
    const BlockQ4_K& blk = src[b];
    const float d = fp16_to_f32(blk.d);
    const float dmin = fp16_to_f32(blk.dmin);
    for (int pair = 0; pair < 4; ++pair) {  // sub-blocks 2*pair (low nibbles) and 2*pair+1 (high)
      const std::uint8_t* q = blk.qs + 32 * pair;
      int sc, mn;
      k_scale_min(2 * pair, blk.scales, &sc, &mn);
      const float d_lo = d * static_cast<float>(sc), m_lo = dmin * static_cast<float>(mn);
      k_scale_min(2 * pair + 1, blk.scales, &sc, &mn);
      const float d_hi = d * static_cast<float>(sc), m_hi = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) dst[l] = d_lo * static_cast<float>(q[l] & 0x0f) - m_lo;
      for (int l = 0; l < 32; ++l) dst[32 + l] = d_hi * static_cast<float>(q[l] >> 4) - m_hi;
      dst += 64;
    }
  }
}

void dequantize_row_q5_k(const BlockQ5_K* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b) {
    const BlockQ5_K& blk = src[b];
    const float d = fp16_to_f32(blk.d);
    const float dmin = fp16_to_f32(blk.dmin);
    for (int pair = 0; pair < 4; ++pair) {
      const std::uint8_t* q = blk.qs + 32 * pair;
      const std::uint8_t bit_lo = static_cast<std::uint8_t>(1u << (2 * pair));
      const std::uint8_t bit_hi = static_cast<std::uint8_t>(1u << (2 * pair + 1));
      int sc, mn;
      k_scale_min(2 * pair, blk.scales, &sc, &mn);
      const float d_lo = d * static_cast<float>(sc), m_lo = dmin * static_cast<float>(mn);
      k_scale_min(2 * pair + 1, blk.scales, &sc, &mn);
      const float d_hi = d * static_cast<float>(sc), m_hi = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] & 0x0f) + ((blk.qh[l] & bit_lo) ? 16 : 0);
        dst[l] = d_lo * static_cast<float>(v) - m_lo;
      }
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] >> 4) + ((blk.qh[l] & bit_hi) ? 16 : 0);
        dst[32 + l] = d_hi * static_cast<float>(v) - m_hi;
      }
      dst += 64;
    }
  }
}

// Q6_K: each half (128 values) uses 64 bytes of ql and 32 of qh. For l < 32, ql[l] holds the
// low nibbles of values l (low) and l + 64 (high), ql[l + 32] those of l + 32 and l + 96;
// qh[l] holds the top two bits of values l, l + 32, l + 64, l + 96 in bit pairs 0-1 .. 6-7.
void dequantize_row_q6_k(const BlockQ6_K* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b) {
    const BlockQ6_K& blk = src[b];
    const float d = fp16_to_f32(blk.d);
    for (int half = 0; half < 2; ++half) {
      const std::uint8_t* ql = blk.ql + 64 * half;
      const std::uint8_t* qh = blk.qh + 32 * half;
      const std::int8_t* sc = blk.scales + 8 * half;
      for (int l = 0; l < 32; ++l) {
        const int s = l / 16;
        const int q0 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q1 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * static_cast<float>(sc[s]) * static_cast<float>(q0);
        dst[l + 32] = d * static_cast<float>(sc[s + 2]) * static_cast<float>(q1);
        dst[l + 64] = d * static_cast<float>(sc[s + 4]) * static_cast<float>(q2);
        dst[l + 96] = d * static_cast<float>(sc[s + 6]) * static_cast<float>(q3);
      }
      dst += 128;
    }
  }
}

void dequantize_row(io::DType t, const void* src, float* dst, std::int64_t n) {
  switch (t) {
    case io::DType::F32: std::memcpy(dst, src, static_cast<std::size_t>(n) * 4); return;
    case io::DType::F16: {
      const auto* p = static_cast<const std::uint8_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = fp16_to_f32(h);
      }
      return;
    }
    case io::DType::BF16: {
      const auto* p = static_cast<const std::uint8_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    }
    case io::DType::I8: {
      const auto* p = static_cast<const std::int8_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(p[i]);
      return;
    }
    case io::DType::Q8_0: return dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n);
    case io::DType::Q4_0: return dequantize_row_q4_0(static_cast<const BlockQ4_0*>(src), dst, n);
    case io::DType::Q4_1: return dequantize_row_q4_1(static_cast<const BlockQ4_1*>(src), dst, n);
    case io::DType::Q4_K: return dequantize_row_q4_k(static_cast<const BlockQ4_K*>(src), dst, n);
    case io::DType::Q5_K: return dequantize_row_q5_k(static_cast<const BlockQ5_K*>(src), dst, n);
    case io::DType::Q6_K: return dequantize_row_q6_k(static_cast<const BlockQ6_K*>(src), dst, n);
    case io::DType::Q5_0: return dequantize_row_q5_0(static_cast<const BlockQ5_0*>(src), dst, n);
    case io::DType::Q5_1: return dequantize_row_q5_1(static_cast<const BlockQ5_1*>(src), dst, n);
    case io::DType::Q2_K: return dequantize_row_q2_k(static_cast<const BlockQ2_K*>(src), dst, n);
    case io::DType::Q3_K: return dequantize_row_q3_k(static_cast<const BlockQ3_K*>(src), dst, n);
    case io::DType::IQ4_NL: return dequantize_row_iq4_nl(static_cast<const BlockIQ4_NL*>(src), dst, n);
    case io::DType::IQ4_XS: return dequantize_row_iq4_xs(static_cast<const BlockIQ4_XS*>(src), dst, n);
    case io::DType::IQ2_XXS: return dequantize_row_iq2_xxs(static_cast<const BlockIQ2_XXS*>(src), dst, n);
    case io::DType::IQ2_XS: return dequantize_row_iq2_xs(static_cast<const BlockIQ2_XS*>(src), dst, n);
    case io::DType::IQ2_S: return dequantize_row_iq2_s(static_cast<const BlockIQ2_S*>(src), dst, n);
    case io::DType::IQ3_XXS: return dequantize_row_iq3_xxs(static_cast<const BlockIQ3_XXS*>(src), dst, n);
    case io::DType::IQ3_S: return dequantize_row_iq3_s(static_cast<const BlockIQ3_S*>(src), dst, n);
    case io::DType::IQ1_S: return dequantize_row_iq1_s(static_cast<const BlockIQ1_S*>(src), dst, n);
    case io::DType::IQ1_M: return dequantize_row_iq1_m(static_cast<const BlockIQ1_M*>(src), dst, n);
  }
  fail("dequantize_row: unknown dtype ", static_cast<int>(t));
}

// ---------------------------------------------------------------------------------------
// Quantization

namespace {

// Nearest integer of v clamped to [lo, hi] (clamping first keeps the conversion defined).
int nearest_clamped(float v, int lo, int hi) {
  if (!(v >= static_cast<float>(lo))) return lo;  // also catches NaN
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(std::nearbyint(v));
}

// fp16 nearest to v, saturating at the largest finite value instead of overflowing to inf.
std::uint16_t fp16_saturating(float v) {
  const std::uint16_t h = f32_to_fp16(v);
  return (h & 0x7fffu) == 0x7c00u ? static_cast<std::uint16_t>((h & 0x8000u) | 0x7bffu) : h;
}

// The smallest fp16 value >= v (v >= 0), saturating at the largest finite fp16, so that a
// scale rounded to fp16 still covers the range it was computed for.
std::uint16_t fp16_at_least(float v) {
  if (!(v > 0.0f)) return 0;
  if (v >= 65504.0f) return 0x7bff;
  std::uint16_t h = f32_to_fp16(v);
  if (fp16_to_f32(h) < v) ++h;
  return h;
}

float max_abs_signed(const float* x, int n) {  // the value with the largest magnitude
  float best = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(best)) best = x[i];
  return best;
}

// Packs eight 6-bit (scale, min) pairs in the Q4_K / Q5_K layout (inverse of k_scale_min).
void pack_k_scales(const int* sc, const int* mn, std::uint8_t* packed) {
  std::memset(packed, 0, kKScaleBytes);
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<std::uint8_t>(sc[j] & 63);
    packed[j + 4] = static_cast<std::uint8_t>(mn[j] & 63);
  }
  for (int j = 4; j < 8; ++j) {
    packed[j + 4] = static_cast<std::uint8_t>((sc[j] & 0x0f) | ((mn[j] & 0x0f) << 4));
    packed[j - 4] |= static_cast<std::uint8_t>((sc[j] >> 4) << 6);
    packed[j] |= static_cast<std::uint8_t>((mn[j] >> 4) << 6);
  }
}

// Shared part of Q4_K and Q5_K: per 32-value sub-block, an affine map x ≈ d*sc*q - dmin*mn
// with q in [0, levels]. Writes the fp16 super-scales, packed scales and the integer q.
void quantize_k_affine(const float* x, int levels, std::uint16_t* d_out, std::uint16_t* dmin_out,
                       std::uint8_t* scales_out, int* q) {
  float sub_scale[8], sub_min[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float* s = x + 32 * j;
    float lo = 0.0f, hi = s[0];
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, s[l]);
      hi = std::max(hi, s[l]);
    }
    sub_scale[j] = (hi - lo) / static_cast<float>(levels);
    sub_min[j] = -lo;
    max_scale = std::max(max_scale, sub_scale[j]);
    max_min = std::max(max_min, sub_min[j]);
  }
  *d_out = fp16_at_least(max_scale / 63.0f);
  *dmin_out = fp16_at_least(max_min / 63.0f);
  const float d = fp16_to_f32(*d_out), dmin = fp16_to_f32(*dmin_out);
  int sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    // Round the scale up so the sub-block's range stays covered; the min to nearest.
    sc[j] = d > 0.0f ? std::min(63, static_cast<int>(std::ceil(sub_scale[j] / d))) : 0;
    mn[j] = dmin > 0.0f ? nearest_clamped(sub_min[j] / dmin, 0, 63) : 0;
    const float eff_d = d * static_cast<float>(sc[j]);
    const float eff_m = dmin * static_cast<float>(mn[j]);
    for (int l = 0; l < 32; ++l)
      q[32 * j + l] = eff_d > 0.0f ? nearest_clamped((x[32 * j + l] + eff_m) / eff_d, 0, levels) : 0;
  }
  pack_k_scales(sc, mn, scales_out);
}

}  // namespace

void quantize_row_q8_0(const float* src, BlockQ8_0* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQK; ++b, src += kQK) {
    float amax = 0.0f;
    for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(src[i]));
    dst[b].d = fp16_saturating(amax / 127.0f);
    const float d = fp16_to_f32(dst[b].d);
    for (int i = 0; i < kQK; ++i)
      dst[b].qs[i] = static_cast<std::int8_t>(d > 0.0f ? nearest_clamped(src[i] / d, -128, 127) : 0);
  }
}

void quantize_row_q4_0(const float* src, BlockQ4_0* dst, std::int64_t n) {
  // ggml's own q4_0 rule (q4_formats.h), the one `ringlm convert` and load-time quantization
  // use, so a GGUF file ringlm writes holds the codes llama.cpp's reference quantizer would.
  quantize_row_q4_0_ref(src, dst, static_cast<std::size_t>(n / kQK * kQK));
}

void quantize_row_q4_1(const float* src, BlockQ4_1* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQK; ++b, src += kQK) {
    float lo = src[0], hi = src[0];
    for (int i = 0; i < kQK; ++i) {
      lo = std::min(lo, src[i]);
      hi = std::max(hi, src[i]);
    }
    dst[b].m = fp16_saturating(lo);
    const float m = fp16_to_f32(dst[b].m);
    dst[b].d = fp16_at_least((hi - m) / 15.0f);
    const float d = fp16_to_f32(dst[b].d);
    int q[kQK];
    for (int i = 0; i < kQK; ++i) q[i] = d > 0.0f ? nearest_clamped((src[i] - m) / d, 0, 15) : 0;
    for (int i = 0; i < kQK / 2; ++i)
      dst[b].qs[i] = static_cast<std::uint8_t>(q[i] | (q[i + kQK / 2] << 4));
  }
}

void quantize_row_q4_k(const float* src, BlockQ4_K* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b, src += kQKK) {
    int q[kQKK];
    quantize_k_affine(src, 15, &dst[b].d, &dst[b].dmin, dst[b].scales, q);
    for (int pair = 0; pair < 4; ++pair)
      for (int l = 0; l < 32; ++l)
        dst[b].qs[32 * pair + l] =
            static_cast<std::uint8_t>(q[64 * pair + l] | (q[64 * pair + 32 + l] << 4));
  }
}

void quantize_row_q5_k(const float* src, BlockQ5_K* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b, src += kQKK) {
    int q[kQKK];
    quantize_k_affine(src, 31, &dst[b].d, &dst[b].dmin, dst[b].scales, q);
    std::memset(dst[b].qh, 0, sizeof(dst[b].qh));
    for (int pair = 0; pair < 4; ++pair) {
      for (int l = 0; l < 32; ++l) {
        const int lo = q[64 * pair + l], hi = q[64 * pair + 32 + l];
        dst[b].qs[32 * pair + l] = static_cast<std::uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
        if (lo & 16) dst[b].qh[l] |= static_cast<std::uint8_t>(1u << (2 * pair));
        if (hi & 16) dst[b].qh[l] |= static_cast<std::uint8_t>(1u << (2 * pair + 1));
      }
    }
  }
}

void quantize_row_q6_k(const float* src, BlockQ6_K* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b, src += kQKK) {
    float sub_scale[16];
    float max_scale = 0.0f;
    for (int j = 0; j < 16; ++j) {
      // As in Q4_0, the largest-magnitude value maps to level -32 exactly.
      sub_scale[j] = max_abs_signed(src + 16 * j, 16) / -32.0f;
      max_scale = std::max(max_scale, std::fabs(sub_scale[j]));
    }
    dst[b].d = fp16_at_least(max_scale / 127.0f);
    const float d = fp16_to_f32(dst[b].d);
    int L[kQKK];
    for (int j = 0; j < 16; ++j) {
      const int sc = d > 0.0f ? nearest_clamped(sub_scale[j] / d, -128, 127) : 0;
      dst[b].scales[j] = static_cast<std::int8_t>(sc);
      const float eff = d * static_cast<float>(sc);
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = 32 + (eff != 0.0f ? nearest_clamped(src[16 * j + l] / eff, -32, 31) : 0);
    }
    for (int half = 0; half < 2; ++half) {
      std::uint8_t* ql = dst[b].ql + 64 * half;
      std::uint8_t* qh = dst[b].qh + 32 * half;
      const int* v = L + 128 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<std::uint8_t>((v[l] & 0x0f) | ((v[l + 64] & 0x0f) << 4));
        ql[l + 32] = static_cast<std::uint8_t>((v[l + 32] & 0x0f) | ((v[l + 96] & 0x0f) << 4));
        qh[l] = static_cast<std::uint8_t>((v[l] >> 4) | ((v[l + 32] >> 4) << 2) |
                                          ((v[l + 64] >> 4) << 4) | ((v[l + 96] >> 4) << 6));
      }
    }
  }
}

void quantize_row(io::DType t, const float* src, void* dst, std::int64_t n) {
  switch (t) {
    case io::DType::F32: std::memcpy(dst, src, static_cast<std::size_t>(n) * 4); return;
    case io::DType::F16:
    case io::DType::BF16: {
      auto* p = static_cast<std::uint8_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) {
        const std::uint16_t h = t == io::DType::F16 ? f32_to_fp16(src[i]) : f32_to_bf16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    }
    case io::DType::I8: {
      auto* p = static_cast<std::int8_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<std::int8_t>(nearest_clamped(src[i], -128, 127));
      return;
    }
    case io::DType::Q8_0: return quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), n);
    case io::DType::Q4_0: return quantize_row_q4_0(src, static_cast<BlockQ4_0*>(dst), n);
    case io::DType::Q4_1: return quantize_row_q4_1(src, static_cast<BlockQ4_1*>(dst), n);
    case io::DType::Q4_K: return quantize_row_q4_k(src, static_cast<BlockQ4_K*>(dst), n);
    case io::DType::Q5_K: return quantize_row_q5_k(src, static_cast<BlockQ5_K*>(dst), n);
    case io::DType::Q6_K: return quantize_row_q6_k(src, static_cast<BlockQ6_K*>(dst), n);
    case io::DType::Q5_0:
    case io::DType::Q5_1:
    case io::DType::Q2_K:
    case io::DType::Q3_K:
    case io::DType::IQ4_NL:
    case io::DType::IQ4_XS:
    case io::DType::IQ2_XXS:
    case io::DType::IQ2_XS:
    case io::DType::IQ2_S:
    case io::DType::IQ3_XXS:
    case io::DType::IQ3_S:
    case io::DType::IQ1_S:
    case io::DType::IQ1_M: break;  // read from GGUF files only; ringlm writes none of them
  }
  fail("quantize_row: ringlm has no quantizer for ", io::dtype_name(t));
}

}  // namespace ringlm::kernels
