// x86 kernels for ggml_quant_gemm.h, included by ggml_kernels_{avx2,avx512,avx512vnni}.cpp
// under their `#pragma GCC target`, with RINGLM_GGML_VNNI selecting the u8 x s8 dot step:
// vpdpbusd (AVX-512 VNNI, 256-bit form) or vpmaddubsw + vpmaddwd. The latter is exact here
// because no u8 operand exceeds 128 and activations lie in [-127, 127], so a pair sum is at
// most 2 * 128 * 127 = 32512 < 2^15 (no int16 saturation).
//
// One weight row at a time against up to four activation rows (the row's blocks are loaded
// and unpacked once per four tokens), 32 values per step in a 256-bit vector (8 int32
// partial sums -> float -> FMA with the block's combined scale), one horizontal sum per
// output. These are compute-bound at ~6-7 GB/s of weights per core (measured,
// docs/bench/gguf.md): the per-row layout needs a float conversion and FMA per 32 values
// per token, where the 16-row layouts (q4p16, q4kp16) serve 16 rows per instruction. The
// includer must have included <cstring>, "kernels/dequant_ggml.h" and
// "kernels/ggml_kernel_table.h" before its pragma.
#include <immintrin.h>
#include <type_traits>

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

// One activation plane of one token: codes, block scales, block biases (-8 * sum of codes).
struct Plane {
  const std::int8_t* q;
  const float* d;
  const std::int32_t* bias;
};

// Each kernel computes out[t] = W_row . plane t for MT tokens at once, so a weight block is
// loaded and unpacked once per MT tokens (prefill) while MT = 1 serves decode.

struct Q8_0 {
  template <int MT>
  static void dot(const std::uint8_t* w, std::size_t cols, const Plane* p, float* out) {
    __m256 acc[MT], acc2[MT];
    for (int t = 0; t < MT; ++t) acc[t] = acc2[t] = _mm256_setzero_ps();
    const std::size_t nb = cols / 32;
    for (std::size_t b = 0; b < nb; ++b) {
      const std::uint8_t* blk = w + b * sizeof(BlockQ8_0);
      const __m256i wv = load32(blk + 2);
      const __m256i wabs = _mm256_sign_epi8(wv, wv);  // |w| as u8 (-128 -> 128)
      const float dw = fp16(blk);
      for (int t = 0; t < MT; ++t) {
        // a with w's sign against |w|: the same products as w * a, in u8 x s8 form.
        const __m256i s = dot_u8s8(wabs, _mm256_sign_epi8(load32(p[t].q + b * 32), wv));
        // Alternate accumulators on odd blocks: two FMA chains when MT is small.
        if (b & 1)
          acc2[t] = fma_block(s, dw * p[t].d[b], acc2[t]);
        else
          acc[t] = fma_block(s, dw * p[t].d[b], acc[t]);
      }
    }
    for (int t = 0; t < MT; ++t) out[t] = hsum(_mm256_add_ps(acc[t], acc2[t]));
  }
};

// Q4_K (kFifthBit = false) and Q5_K. Per super-block the eight 6-bit scales and mins are
// unpacked with 32-bit word operations and converted to float once (d * sc exact); per token
// the combined scales d * sc_j * d_j go to a small table, and the min term
// sum_j (dmin * m_j * d_j) * sum(q_j) is one vector FMA. Pair p of sub-blocks (2p: low
// nibbles, 2p+1: high) is 32 code bytes; each sub-block is one activation block.
template <bool kFifthBit>
struct QK45 {
  template <int MT>
  static void dot(const std::uint8_t* w, std::size_t cols, const Plane* p, float* out) {
    constexpr std::size_t kBytes = kFifthBit ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
    const __m256i mask = _mm256_set1_epi8(0x0f);
    const __m256i one = _mm256_set1_epi8(1);
    __m256 acc[MT], macc[MT];
    for (int t = 0; t < MT; ++t) acc[t] = macc[t] = _mm256_setzero_ps();
    alignas(32) float comb[MT][8];
    for (std::size_t sb = 0; sb < cols / 256; ++sb) {
      const std::uint8_t* blk = w + sb * kBytes;
      const std::uint8_t* qh = blk + 4 + kKScaleBytes;
      const std::uint8_t* qs = kFifthBit ? qh + 32 : blk + 4 + kKScaleBytes;
      std::uint32_t u[3];
      std::memcpy(u, blk + 4, 12);
      // k_scale_min for j = 0..7, four at a time (bytes of 32-bit words).
      const std::uint32_t sc_lo = u[0] & 0x3f3f3f3fu, mn_lo = u[1] & 0x3f3f3f3fu;
      const std::uint32_t sc_hi = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
      const std::uint32_t mn_hi = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
      const __m256 scf = _mm256_mul_ps(
          _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo)))),
          _mm256_set1_ps(fp16(blk)));
      const __m256 mnf = _mm256_mul_ps(
          _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, static_cast<int>(mn_hi), static_cast<int>(mn_lo)))),
          _mm256_set1_ps(fp16(blk + 2)));
      for (int t = 0; t < MT; ++t) {
        const __m256 da = _mm256_loadu_ps(p[t].d + sb * 8);
        _mm256_store_ps(comb[t], _mm256_mul_ps(scf, da));
        // sum(q) = -bias / 8, exact in float (|sum| <= 4064).
        const __m256 sumq = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256(
                                              reinterpret_cast<const __m256i*>(p[t].bias + sb * 8))),
                                          _mm256_set1_ps(-0.125f));
        macc[t] = _mm256_fmadd_ps(_mm256_mul_ps(mnf, da), sumq, macc[t]);
      }
      __m256i hbits = kFifthBit ? load32(qh) : _mm256_setzero_si256();
      for (int pr = 0; pr < 4; ++pr) {
        const __m256i c = load32(qs + 32 * pr);
        __m256i lo = _mm256_and_si256(c, mask);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(c, 4), mask);
        if (kFifthBit) {  // bit 2p (2p+1) of qh[l] is bit 4 of value l of sub-block 2p (2p+1)
          lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4));
          hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 1), one), 4));
          hbits = _mm256_srli_epi16(hbits, 2);
        }
        for (int t = 0; t < MT; ++t) {
          const std::int8_t* a = p[t].q + sb * 256 + 64 * pr;
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_u8s8(lo, load32(a))), _mm256_broadcast_ss(&comb[t][2 * pr]),
                                   acc[t]);
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_u8s8(hi, load32(a + 32))),
                                   _mm256_broadcast_ss(&comb[t][2 * pr + 1]), acc[t]);
        }
      }
    }
    for (int t = 0; t < MT; ++t) out[t] = hsum(acc[t]) - hsum(macc[t]);
  }
};

// Q6_K: per half (128 values), four 32-value code vectors (0..63) built from ql/qh; vector g
// is activation block 4*half + g and holds sub-blocks of 16 with scales sc[2g], sc[2g+1]
// (int32 lanes 0-3 and 4-7). The -32 offset is applied before the integer scales.
struct Q6K {
  template <int MT>
  static void dot(const std::uint8_t* w, std::size_t cols, const Plane* p, float* out) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3), k32 = _mm256_set1_epi8(32);
    __m256 acc[MT];
    for (int t = 0; t < MT; ++t) acc[t] = _mm256_setzero_ps();
    alignas(32) float ddda[MT][8];
    for (std::size_t sb = 0; sb < cols / 256; ++sb) {
      const BlockQ6_K* blk = reinterpret_cast<const BlockQ6_K*>(w) + sb;
      const __m256 dd = _mm256_set1_ps(fp16(reinterpret_cast<const std::uint8_t*>(&blk->d)));
      for (int t = 0; t < MT; ++t) _mm256_store_ps(ddda[t], _mm256_mul_ps(dd, _mm256_loadu_ps(p[t].d + sb * 8)));
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
        // The 8 scales of this half as int32; lanes [sc 2g x4, sc 2g+1 x4] per g by permute.
        const __m256i sc32 = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk->scales + 8 * half)));
        for (int g = 0; g < 4; ++g) {
          const __m256i scv = _mm256_permutevar8x32_epi32(sc32, _mm256_setr_epi32(2 * g, 2 * g, 2 * g, 2 * g, 2 * g + 1,
                                                                                   2 * g + 1, 2 * g + 1, 2 * g + 1));
#if !RINGLM_GGML_VNNI
          const __m256i sc16 = _mm256_packs_epi32(scv, scv);  // int16: sc 2g x8 | sc 2g+1 x8
#endif
          for (int t = 0; t < MT; ++t) {
            const std::size_t k = static_cast<std::size_t>(4 * half + g);
            const __m256i a = load32(p[t].q + sb * 256 + k * 32);
#if RINGLM_GGML_VNNI
            const __m256i s = _mm256_mullo_epi32(_mm256_sub_epi32(dot_u8s8(codes[g], a), dot_u8s8(k32, a)), scv);
#else
            // int16 pair sums of (code - 32) * a (|.| <= 2 * 32 * 127), then x scale in pairs.
            const __m256i s = _mm256_madd_epi16(
                _mm256_sub_epi16(_mm256_maddubs_epi16(codes[g], a), _mm256_maddubs_epi16(k32, a)), sc16);
#endif
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_broadcast_ss(&ddda[t][k]), acc[t]);
          }
        }
      }
    }
    for (int t = 0; t < MT; ++t) out[t] = hsum(acc[t]);
  }
};

// Rows [r0, r1) x all tokens, four tokens per pass over a weight row (it stays in L1).
template <class K>
void rows(const std::uint8_t* w, std::size_t row_bytes, std::size_t r0, std::size_t r1, const Q8ActView& x,
          float* y, std::size_t ldy) {
  const std::size_t nb = x.cols / 32;
  for (std::size_t r = r0; r < r1; ++r) {
    const std::uint8_t* wr = w + r * row_bytes;
    _mm_prefetch(reinterpret_cast<const char*>(wr + row_bytes), _MM_HINT_T0);
    for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
      const std::int8_t* qs = plane ? x.qs2 : x.qs;
      const float* d = plane ? x.d2 : x.d;
      const std::int32_t* bias = plane ? x.bias2 : x.bias;
      auto plane_of = [&](std::size_t m) { return Plane{qs + m * x.cols, d + m * nb, bias + m * nb}; };
      std::size_t m = 0;
      for (; m + 4 <= x.rows; m += 4) {
        const Plane ps[4] = {plane_of(m), plane_of(m + 1), plane_of(m + 2), plane_of(m + 3)};
        float o[4];
        K::template dot<4>(wr, x.cols, ps, o);
        for (int t = 0; t < 4; ++t) y[(m + t) * ldy + r] = plane ? y[(m + t) * ldy + r] + o[t] : o[t];
      }
      for (; m < x.rows; ++m) {
        const Plane ps[1] = {plane_of(m)};
        float o;
        K::template dot<1>(wr, x.cols, ps, &o);
        y[m * ldy + r] = plane ? y[m * ldy + r] + o : o;
      }
    }
  }
}

}  // namespace
