// x86 kernels for ggml_quant_gemm.h, included by ggml_kernels_{avx2,avx512,avx512vnni}.cpp
// under their `#pragma GCC target`, with RINGLM_GGML_VNNI selecting the u8 x s8 dot step:
// vpdpbusd (AVX-512 VNNI, 256-bit form) or vpmaddubsw + vpmaddwd. The latter is exact here
// because no u8 operand exceeds 128 and activations lie in [-127, 127], so a pair sum is at
// most 2 * 128 * 127 = 32512 < 2^15 (no int16 saturation).
//
// One output = one weight row against one activation row, 32 values per step in a 256-bit
// vector (8 int32 partial sums -> float -> FMA with the block's combined scale), one
// horizontal sum per output. The matrices these serve are memory-bound at decode, so
// 256-bit vectors keep up with DRAM; the includer must have included <cstring>,
// "kernels/dequant_ggml.h" and "kernels/ggml_kernel_table.h" before its pragma.
#include <immintrin.h>

#ifndef RINGLM_GGML_VNNI
#error "define RINGLM_GGML_VNNI (0 or 1) before including ggml_kernels_x86_impl.h"
#endif

namespace {

using namespace ringlm::kernels;

// Sums of four adjacent u8 x s8 products: int32 lane i = sum_{k<4} u[4i+k] * s[4i+k].
inline __m256i dot_u8s8(__m256i u, __m256i s) {
#if RINGLM_GGML_VNNI
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline float fp16(const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256 fma_block(__m256i isum, float scale, __m256 acc) {
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(scale), acc);
}

float dot_q8_0(const std::uint8_t* w, std::size_t cols, const std::int8_t* q, const float* d, const std::int32_t*) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  const std::size_t nb = cols / 32;
  std::size_t b = 0;
  for (; b + 2 <= nb; b += 2) {  // two independent chains
    const std::uint8_t* b0 = w + b * sizeof(BlockQ8_0);
    const std::uint8_t* b1 = b0 + sizeof(BlockQ8_0);
    const __m256i w0 = load32(b0 + 2), w1 = load32(b1 + 2);
    const __m256i a0 = load32(q + b * 32), a1 = load32(q + b * 32 + 32);
    // |w| as u8 (-128 -> 128) against a with w's sign: the same products, u8 x s8.
    const __m256i s0 = dot_u8s8(_mm256_sign_epi8(w0, w0), _mm256_sign_epi8(a0, w0));
    const __m256i s1 = dot_u8s8(_mm256_sign_epi8(w1, w1), _mm256_sign_epi8(a1, w1));
    acc0 = fma_block(s0, fp16(b0) * d[b], acc0);
    acc1 = fma_block(s1, fp16(b1) * d[b + 1], acc1);
  }
  for (; b < nb; ++b) {
    const std::uint8_t* b0 = w + b * sizeof(BlockQ8_0);
    const __m256i w0 = load32(b0 + 2), a0 = load32(q + b * 32);
    acc0 = fma_block(dot_u8s8(_mm256_sign_epi8(w0, w0), _mm256_sign_epi8(a0, w0)), fp16(b0) * d[b], acc0);
  }
  return hsum(_mm256_add_ps(acc0, acc1));
}

// Q4_K (kFifthBit = false) and Q5_K: pair p of sub-blocks (2p: low nibbles, 2p+1: high) is
// 32 code bytes; each sub-block is one activation block. The min term is summed in scalar.
template <bool kFifthBit>
float dot_k4or5(const std::uint8_t* w, std::size_t cols, const std::int8_t* q, const float* d,
                const std::int32_t* bias) {
  constexpr std::size_t kBytes = kFifthBit ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  const __m256i mask = _mm256_set1_epi8(0x0f);
  const __m256i one = _mm256_set1_epi8(1);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float mins = 0.0f;
  for (std::size_t sb = 0; sb < cols / 256; ++sb) {
    const std::uint8_t* blk = w + sb * kBytes;
    const std::uint8_t* scales = blk + 4;
    const std::uint8_t* qh = blk + 4 + kKScaleBytes;
    const std::uint8_t* qs = kFifthBit ? qh + 32 : blk + 4 + kKScaleBytes;
    const float dd = fp16(blk), dm = fp16(blk + 2);
    const std::int8_t* a = q + sb * 256;
    const float* da = d + sb * 8;
    const std::int32_t* bb = bias + sb * 8;
    __m256i hbits = kFifthBit ? load32(qh) : _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      int sc0, m0, sc1, m1;
      k_scale_min(2 * p, scales, &sc0, &m0);
      k_scale_min(2 * p + 1, scales, &sc1, &m1);
      const __m256i c = load32(qs + 32 * p);
      __m256i lo = _mm256_and_si256(c, mask);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(c, 4), mask);
      if (kFifthBit) {  // bit 2p (2p+1) of qh[l] is bit 4 of value l of sub-block 2p (2p+1)
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 1), one), 4));
        hbits = _mm256_srli_epi16(hbits, 2);
      }
      const std::size_t j0 = 2 * static_cast<std::size_t>(p), j1 = j0 + 1;
      acc0 = fma_block(dot_u8s8(lo, load32(a + 32 * j0)), (dd * static_cast<float>(sc0)) * da[j0], acc0);
      acc1 = fma_block(dot_u8s8(hi, load32(a + 32 * j1)), (dd * static_cast<float>(sc1)) * da[j1], acc1);
      mins += ((dm * static_cast<float>(m0)) * da[j0]) * static_cast<float>(-bb[j0] / 8);
      mins += ((dm * static_cast<float>(m1)) * da[j1]) * static_cast<float>(-bb[j1] / 8);
    }
  }
  return hsum(_mm256_add_ps(acc0, acc1)) - mins;
}

// Q6_K: per half (128 values), four 32-value code vectors (0..63) built from ql/qh; vector g
// is activation block 4*half + g and holds sub-blocks of 16 with scales sc[2g], sc[2g+1]
// (lanes 0-3 and 4-7 of the int32 sums). The -32 offset is applied before the scales.
float dot_q6_k(const std::uint8_t* w, std::size_t cols, const std::int8_t* q, const float* d, const std::int32_t*) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3), k32 = _mm256_set1_epi8(32);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (std::size_t sb = 0; sb < cols / 256; ++sb) {
    const BlockQ6_K* blk = reinterpret_cast<const BlockQ6_K*>(w) + sb;
    const float dd = fp16(reinterpret_cast<const std::uint8_t*>(&blk->d));
    for (int half = 0; half < 2; ++half) {
      const __m256i l0 = load32(blk->ql + 64 * half), l1 = load32(blk->ql + 64 * half + 32);
      const __m256i hb = load32(blk->qh + 32 * half);
      __m256i codes[4];
      codes[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
      codes[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4));
      codes[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4));
      codes[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4));
      const std::int8_t* sc = blk->scales + 8 * half;
      for (int g = 0; g < 4; ++g) {
        const std::size_t ab = sb * 8 + static_cast<std::size_t>(4 * half + g);
        const __m256i a = load32(q + ab * 32);
#if RINGLM_GGML_VNNI
        const __m256i s = _mm256_sub_epi32(dot_u8s8(codes[g], a), dot_u8s8(k32, a));
        const __m256i scaled =
            _mm256_mullo_epi32(s, _mm256_set_m128i(_mm_set1_epi32(sc[2 * g + 1]), _mm_set1_epi32(sc[2 * g])));
#else
        // int16 pair sums of (code - 32) * a: |.| <= 2 * 32 * 127, then x scale, summed in pairs.
        const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(codes[g], a), _mm256_maddubs_epi16(k32, a));
        const __m256i scaled =
            _mm256_madd_epi16(p, _mm256_set_m128i(_mm_set1_epi16(sc[2 * g + 1]), _mm_set1_epi16(sc[2 * g])));
#endif
        if (g & 1)
          acc1 = fma_block(scaled, dd * d[ab], acc1);
        else
          acc0 = fma_block(scaled, dd * d[ab], acc0);
      }
    }
  }
  return hsum(_mm256_add_ps(acc0, acc1));
}

using DotFn = float (*)(const std::uint8_t*, std::size_t, const std::int8_t*, const float*, const std::int32_t*);

template <DotFn Dot>
void rows(const std::uint8_t* w, std::size_t row_bytes, std::size_t r0, std::size_t r1, const Q8ActView& x,
          float* y, std::size_t ldy) {
  const std::size_t nb = x.cols / 32;
  for (std::size_t r = r0; r < r1; ++r) {
    const std::uint8_t* wr = w + r * row_bytes;
    _mm_prefetch(reinterpret_cast<const char*>(wr + row_bytes), _MM_HINT_T0);
    for (std::size_t m = 0; m < x.rows; ++m) {
      float v = Dot(wr, x.cols, x.qs + m * x.cols, x.d + m * nb, x.bias + m * nb);
      if (x.qs2 != nullptr) v += Dot(wr, x.cols, x.qs2 + m * x.cols, x.d2 + m * nb, x.bias2 + m * nb);
      y[m * ldy + r] = v;
    }
  }
}

}  // namespace
