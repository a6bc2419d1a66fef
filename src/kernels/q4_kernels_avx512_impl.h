// Internal: the AVX-512 kernels, compiled twice (q4_kernels_avx512.cpp without VNNI,
// q4_kernels_avx512vnni.cpp with it) under the includer's `#pragma GCC target`, with
// RINGLM_AVX512_VNNI set to 0 or 1. Everything here has internal linkage.
//
// q4 x q8 inner step (see q4_packed.h): one 64-byte line of codes holds 4 bytes of each of
// 16 rows; the low nibbles are elements 4t..4t+3 and the high nibbles 16+4t..16+4t+3, so
// a u8 x s8 dot of 4 (vpdpbusd, or vpmaddubsw + vpmaddwd without VNNI) against the
// activation's 4 bytes broadcast gives, in 32-bit lane r, row r's partial sum. Eight steps
// per block, then one int->float conversion and one FMA per block for all 16 rows.
#include <immintrin.h>

#include <cstring>

// Activation rows per GEMM tile of the non-VNNI path (the VNNI path has its own tile,
// q4_tile_vnni_impl.h).
#define RINGLM_Q4_TILE_ROWS 4

namespace {

using namespace ringlm::kernels;

// Software prefetch distance on the code stream, in bytes (16 blocks ahead). bench_kernels
// GEMV, 2 threads, quiet machine: 4 KB gave the best and median GB/s on every E2B shape
// (+4-20 % median over 2 KB), 8 KB was worse. E2B decode A/B (4 interleaved runs each):
// 2 KB 13.8-14.8 tok/s, 4 KB 13.3-15.5, i.e. within this VM's noise.
constexpr std::size_t kPrefetchBytes = 4096;

inline __m512i bcast4(const std::int8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Integer dot of one block (codes lo[t]/hi[t]) with activation bytes a[0..31], plus bias.
inline __m512i block_dot(const __m512i lo[4], const __m512i hi[4], const std::int8_t* a, std::int32_t bias) {
#if RINGLM_AVX512_VNNI
  __m512i s0 = _mm512_set1_epi32(bias), s1 = _mm512_setzero_si512();
  for (int t = 0; t < 4; ++t) {
    s0 = _mm512_dpbusd_epi32(s0, lo[t], bcast4(a + 4 * t));
    s1 = _mm512_dpbusd_epi32(s1, hi[t], bcast4(a + 16 + 4 * t));
  }
  return _mm512_add_epi32(s0, s1);
#else
  // |code * q| pairs <= 2*15*128, eight of them summed <= 30720: no int16 saturation.
  __m512i p = _mm512_setzero_si512();
  for (int t = 0; t < 4; ++t) {
    p = _mm512_add_epi16(p, _mm512_maddubs_epi16(lo[t], bcast4(a + 4 * t)));
    p = _mm512_add_epi16(p, _mm512_maddubs_epi16(hi[t], bcast4(a + 16 + 4 * t)));
  }
  return _mm512_add_epi32(_mm512_set1_epi32(bias), _mm512_madd_epi16(p, _mm512_set1_epi16(1)));
#endif
}

// acc[i] (16 rows of group) += W_group[:, blocks b0..b1) . x row (m0 + i), for MT rows.
template <int MT>
inline void q4_group_rows(const std::uint8_t* codes, const std::uint16_t* scales, std::size_t b0, std::size_t b1,
                          const Q8ActView& x, std::size_t m0, __m512 acc[MT]) {
  const __m512i mask = _mm512_set1_epi8(0x0f);
  for (std::size_t b = b0; b < b1; ++b) {
    const std::uint8_t* cb = codes + b * 256;
    _mm_prefetch(reinterpret_cast<const char*>(cb + kPrefetchBytes), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(cb + kPrefetchBytes + 64), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(cb + kPrefetchBytes + 128), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(cb + kPrefetchBytes + 192), _MM_HINT_T0);
    // The fp16 scales sit after all of a group's codes, so the code prefetch reaches them only
    // near the group's end: their own stream, the same blocks ahead (as the VNNI GEMV, 320832c).
    _mm_prefetch(reinterpret_cast<const char*>(scales + b * 16) + kPrefetchBytes / 8, _MM_HINT_T0);
    __m512i lo[4], hi[4];
    for (int t = 0; t < 4; ++t) {
      const __m512i c = _mm512_loadu_si512(cb + 64 * t);
      lo[t] = _mm512_and_si512(c, mask);
      hi[t] = _mm512_and_si512(_mm512_srli_epi16(c, 4), mask);
    }
    const __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + b * 16)));
    for (int i = 0; i < MT; ++i) {
      const std::size_t m = m0 + i;
      const std::size_t xb = m * (x.cols / 32) + b;
      __m512i s = block_dot(lo, hi, x.qs + m * x.cols + b * 32, x.bias[xb]);
      float xd = x.d[xb];
      if (x.qs2 != nullptr) {  // two planes: 254 * plane 1 + plane 2, scale d2
        const __m512i s2 = block_dot(lo, hi, x.qs2 + m * x.cols + b * 32, x.bias2[xb]);
        s = _mm512_add_epi32(_mm512_mullo_epi32(s, _mm512_set1_epi32(254)), s2);
        xd = x.d2[xb];
      }
      acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s), ws), _mm512_set1_ps(xd), acc[i]);
    }
  }
}

#if RINGLM_AVX512_VNNI
#include "kernels/q4_gemv_vnni_impl.h"
#include "kernels/q4_tile_vnni_impl.h"
#include "kernels/q4_smallm_vnni_impl.h"
#include "kernels/q4_prefill_vnni_impl.h"
#endif

// Output rows of group g for activation rows m0..m0+MT, over blocks [b0, b1); adds to what
// y holds when `accumulate` (later K chunks), else overwrites it.
template <int MT>
inline void q4_group_tile(const Q4Packed& w, std::size_t g, std::size_t b0, std::size_t b1, bool accumulate,
                          const Q8ActView& x, std::size_t m0, float* y, std::size_t ldy) {
  const std::size_t n0 = g * kQ4GroupRows;
  const std::size_t valid = w.rows - n0 < kQ4GroupRows ? w.rows - n0 : kQ4GroupRows;
  const __mmask16 keep = static_cast<__mmask16>((1u << valid) - 1u);
  __m512 acc[MT];
  for (int i = 0; i < MT; ++i)
    acc[i] = accumulate ? _mm512_maskz_loadu_ps(keep, y + (m0 + i) * ldy + n0) : _mm512_setzero_ps();
  q4_group_rows<MT>(w.group_codes(g), w.group_scales(g), b0, b1, x, m0, acc);
  for (int i = 0; i < MT; ++i) _mm512_mask_storeu_ps(y + (m0 + i) * ldy + n0, keep, acc[i]);
}

// The last rows of a chunk (fewer than a full tile): one tile of exactly `left` rows.
template <int MT>
inline void q4_group_tail(const Q4Packed& w, std::size_t g, std::size_t b0, std::size_t b1, bool accumulate,
                          const Q8ActView& x, std::size_t m0, std::size_t left, float* y, std::size_t ldy) {
  if (left == MT) return q4_group_tile<MT>(w, g, b0, b1, accumulate, x, m0, y, ldy);
  if constexpr (MT > 1) q4_group_tail<MT - 1>(w, g, b0, b1, accumulate, x, m0, left, y, ldy);
}

void q4_matmul_groups_avx512(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                             std::size_t ldy) {
#if RINGLM_AVX512_VNNI
  if (x.rows == 1) {  // decode: the latency-hiding GEMV form (same bits as the tile)
    if (x.qs2 != nullptr) q4_gemv_vnni<true>(w, g0, g1, x, y);
    else q4_gemv_vnni<false>(w, g0, g1, x, y);
    return;
  }
  // A verify step or a small batch, 3..8 rows: two groups per register tile sharing each
  // activation broadcast, group pair after group pair (q4_matmul_groups_vnni_pairs), same bits
  // per row; which counts: pair_form_takes.
  if (pair_form_takes(x.rows, x.qs2 != nullptr)) return q4_matmul_groups_vnni_pairs(w, g0, g1, x, y, ldy);
  // 2 rows (and 3 of one plane): the GEMV widened to them (q4_smallm_vnni_impl.h).
  if (x.rows <= kSmallMMaxRows) return q4_matmul_groups_vnni_smallm(w, g0, g1, x, y, ldy);
  // Prefill when switched on (dispatch.h set_q4_prefill_gemm; off by default, slower than the
  // tile on the Zen 5 VM): two groups x four rows per register tile (q4_prefill_vnni_impl.h),
  // same bits per row.
  if (x.rows >= kPrefillMinRows && q4_prefill_gemm()) return q4_matmul_groups_vnni_prefill(w, g0, g1, x, y, ldy);
  // Several rows: the packed-activation tile (q4_tile_vnni_impl.h), same bits per row.
  return q4_matmul_groups_vnni_tiles(w, g0, g1, x, y, ldy);
#else
  // Activation rows sharing one load+unpack of a weight block.
  constexpr std::size_t kMT = RINGLM_Q4_TILE_ROWS;
  // With several activation rows, a group's weights are re-read once per tile: cut K into
  // chunks of 64 blocks (18 KB of weights) so that re-read hits L1 even for K = 12288.
  const std::size_t nb = w.blocks_per_row();
  const std::size_t kchunk = x.rows > kMT ? 64 : nb;
  for (std::size_t g = g0; g < g1; ++g) {
    for (std::size_t b0 = 0; b0 < nb; b0 += kchunk) {
      const std::size_t b1 = b0 + kchunk < nb ? b0 + kchunk : nb;
      const bool accumulate = b0 != 0;
      std::size_t m = 0;
      for (; m + kMT <= x.rows; m += kMT) q4_group_tile<kMT>(w, g, b0, b1, accumulate, x, m, y, ldy);
      if (m < x.rows) q4_group_tail<kMT - 1>(w, g, b0, b1, accumulate, x, m, x.rows - m, y, ldy);
    }
  }
#endif
}

void quantize_act_row_avx512(const float* x, std::size_t cols, std::int8_t* qs, float* d, std::int32_t* bias,
                             std::int8_t* qs2, float* d2, std::int32_t* bias2) {
  for (std::size_t b = 0; b < cols / 32; ++b) {
    const __m512 v0 = _mm512_loadu_ps(x + b * 32), v1 = _mm512_loadu_ps(x + b * 32 + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    // cvtps rounds with MXCSR's default round-half-even, as std::nearbyint in the reference.
    const __m512 t0 = _mm512_mul_ps(v0, vid), t1 = _mm512_mul_ps(v1, vid);
    const __m512i q0 = _mm512_cvtps_epi32(t0);
    const __m512i q1 = _mm512_cvtps_epi32(t1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + b * 32), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + b * 32 + 16), _mm512_cvtsepi32_epi8(q1));
    d[b] = db;
    bias[b] = -8 * _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    if (qs2 != nullptr) {
      const __m512 k254 = _mm512_set1_ps(254.0f);
      const __m512i r0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_sub_ps(t0, _mm512_cvtepi32_ps(q0)), k254));
      const __m512i r1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_sub_ps(t1, _mm512_cvtepi32_ps(q1)), k254));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs2 + b * 32), _mm512_cvtsepi32_epi8(r0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs2 + b * 32 + 16), _mm512_cvtsepi32_epi8(r1));
      d2[b] = db / 254.0f;
      bias2[b] = -8 * _mm512_reduce_add_epi32(_mm512_add_epi32(r0, r1));
    }
  }
}

template <int R>
inline void i8_rows_f32(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t n, const float* x,
                        float* y) {
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (std::size_t k = 0; k < cols; k += 16) {
    const __m512 xv = _mm512_loadu_ps(x + k);
    for (int r = 0; r < R; ++r) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + (n + r) * cols + k));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)), xv, acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) y[n + r] = scale[n + r] * _mm512_reduce_add_ps(acc[r]);
}

void i8_gemv_f32_avx512(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0, std::size_t r1,
                        const float* x, float* y) {
  if (cols % 16 != 0) return kScalarKernels.i8_gemv_f32(w, scale, cols, r0, r1, x, y);
  std::size_t n = r0;
  for (; n + 4 <= r1; n += 4) i8_rows_f32<4>(w, scale, cols, n, x, y);
  for (; n < r1; ++n) i8_rows_f32<1>(w, scale, cols, n, x, y);
}

// int8 rows x q8 activation: two blocks per 64-byte step, lanes 0-7 hold block 2i's
// partial sums and lanes 8-15 block 2i+1's.
// VNNI: w ^ 0x80 = w + 128 as u8, so dpbusd gives sum(w*q) + 128*sum(q); the lanes start
// at -16*sum(q) each (8 lanes per block: -128*sum(q) in all), i.e. at 2*bias (bias = -8*sum).
// Without VNNI, vpmaddubsw would saturate on (w+128)*q pairs, so use |w| x sign(w)*q.
template <int R>
inline void i8_rows_q8(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t n,
                       const Q8ActView& x, float* y) {
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (std::size_t k = 0; k < cols; k += 64) {
    const __m512i a = _mm512_loadu_si512(x.qs + k);
    const __m512 dv = _mm512_insertf32x8(_mm512_set1_ps(x.d[k / 32]), _mm256_set1_ps(x.d[k / 32 + 1]), 1);
#if RINGLM_AVX512_VNNI
    const __m512i init = _mm512_inserti32x8(_mm512_set1_epi32(2 * x.bias[k / 32]),
                                            _mm256_set1_epi32(2 * x.bias[k / 32 + 1]), 1);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#endif
    for (int r = 0; r < R; ++r) {
      const __m512i wv = _mm512_loadu_si512(w + (n + r) * cols + k);
#if RINGLM_AVX512_VNNI
      const __m512i s = _mm512_dpbusd_epi32(init, _mm512_xor_si512(wv, flip), a);
#else
      const __m512i u = _mm512_abs_epi8(wv);
      const __m512i sa = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(wv), _mm512_setzero_si512(), a);
      const __m512i s = _mm512_madd_epi16(_mm512_maddubs_epi16(u, sa), _mm512_set1_epi16(1));
#endif
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), dv, acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) y[n + r] = scale[n + r] * _mm512_reduce_add_ps(acc[r]);
}

void i8_gemv_q8_avx512(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0, std::size_t r1,
                       const Q8ActView& x, float* y) {
  if (cols % 64 != 0) return kScalarKernels.i8_gemv_q8(w, scale, cols, r0, r1, x, y);
  std::size_t n = r0;
  for (; n + 4 <= r1; n += 4) i8_rows_q8<4>(w, scale, cols, n, x, y);
  for (; n < r1; ++n) i8_rows_q8<1>(w, scale, cols, n, x, y);
}

}  // namespace
