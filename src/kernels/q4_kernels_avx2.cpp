// AVX2 + FMA + F16C kernels. Same packed layout as AVX-512: each 64-byte line of codes is
// processed as two 32-byte halves (rows 0-7 and 8-15 of the group); u8 x s8 dots via
// vpmaddubsw, eight of them summed in int16 (bounded by 30720), then one vpmaddwd.
#include <cstring>

#include "kernels/kernel_table.h"

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>

namespace {

using namespace ringlm::kernels;

inline __m256i bcast4(const std::int8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// bias + the block's dot for 8 rows (codes lo[t]/hi[t]) with activation bytes a[0..31].
inline __m256i block_dot(const __m256i lo[4], const __m256i hi[4], const std::int8_t* a, std::int32_t bias,
                         __m256i ones) {
  __m256i p = _mm256_setzero_si256();
  for (int t = 0; t < 4; ++t) {
    p = _mm256_add_epi16(p, _mm256_maddubs_epi16(lo[t], bcast4(a + 4 * t)));
    p = _mm256_add_epi16(p, _mm256_maddubs_epi16(hi[t], bcast4(a + 16 + 4 * t)));
  }
  return _mm256_add_epi32(_mm256_set1_epi32(bias), _mm256_madd_epi16(p, ones));
}

template <int MT>
inline void q4_group_tile(const Q4Packed& w, std::size_t g, const Q8ActView& x, std::size_t m0, float* y,
                          std::size_t ldy) {
  const std::uint8_t* codes = w.group_codes(g);
  const std::uint16_t* scales = w.group_scales(g);
  const std::size_t nb = w.blocks_per_row();
  const __m256i mask = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[MT][2];
  for (int i = 0; i < MT; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* cb = codes + b * 256;
    _mm_prefetch(reinterpret_cast<const char*>(cb + 2048), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(cb + 2048 + 64), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(cb + 2048 + 128), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(cb + 2048 + 192), _MM_HINT_T0);
    // The fp16 scales sit after all of a group's codes, so the code prefetch reaches them only
    // near the group's end: their own stream, the same blocks ahead (as the VNNI GEMV, 320832c).
    _mm_prefetch(reinterpret_cast<const char*>(scales + b * 16) + 2048 / 8, _MM_HINT_T0);
    for (int h = 0; h < 2; ++h) {  // rows 8h .. 8h+7 of the group
      __m256i lo[4], hi[4];
      for (int t = 0; t < 4; ++t) {
        const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 64 * t + 32 * h));
        lo[t] = _mm256_and_si256(c, mask);
        hi[t] = _mm256_and_si256(_mm256_srli_epi16(c, 4), mask);
      }
      const __m256 ws = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + b * 16 + 8 * h)));
      for (int i = 0; i < MT; ++i) {
        const std::size_t m = m0 + i;
        const std::size_t xb = m * (x.cols / 32) + b;
        __m256i s = block_dot(lo, hi, x.qs + m * x.cols + b * 32, x.bias[xb], ones);
        float xd = x.d[xb];
        if (x.qs2 != nullptr) {  // two planes: 254 * plane 1 + plane 2, scale d2
          const __m256i s2 = block_dot(lo, hi, x.qs2 + m * x.cols + b * 32, x.bias2[xb], ones);
          s = _mm256_add_epi32(_mm256_mullo_epi32(s, _mm256_set1_epi32(254)), s2);
          xd = x.d2[xb];
        }
        acc[i][h] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(s), ws), _mm256_set1_ps(xd), acc[i][h]);
      }
    }
  }
  const std::size_t n0 = g * kQ4GroupRows;
  const std::size_t valid = w.rows - n0 < kQ4GroupRows ? w.rows - n0 : kQ4GroupRows;
  for (int i = 0; i < MT; ++i) {
    float* out = y + (m0 + i) * ldy + n0;
    if (valid == kQ4GroupRows) {
      _mm256_storeu_ps(out, acc[i][0]);
      _mm256_storeu_ps(out + 8, acc[i][1]);
    } else {
      alignas(32) float tmp[16];
      _mm256_store_ps(tmp, acc[i][0]);
      _mm256_store_ps(tmp + 8, acc[i][1]);
      std::memcpy(out, tmp, valid * sizeof(float));
    }
  }
}

void q4_matmul_groups_avx2(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                           std::size_t ldy) {
  constexpr std::size_t kMT = 2;  // 16 ymm of codes + 2x2 accumulators: stay within 16 registers
  for (std::size_t g = g0; g < g1; ++g) {
    std::size_t m = 0;
    for (; m + kMT <= x.rows; m += kMT) q4_group_tile<kMT>(w, g, x, m, y, ldy);
    if (m < x.rows) q4_group_tile<1>(w, g, x, m, y, ldy);
  }
}

inline float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline std::int32_t hsum8i(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// Narrows 4 x 8 int32 (in element order) to 32 int8 with saturation. packs work per 128-bit
// lane; the final permute restores element order.
inline void store_codes(const __m256i q[4], std::int8_t* out) {
  const __m256i q01 = _mm256_packs_epi32(q[0], q[1]), q23 = _mm256_packs_epi32(q[2], q[3]);
  const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q01, q23),
                                                    _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bytes);
}

void quantize_act_row_avx2(const float* x, std::size_t cols, std::int8_t* qs, float* d, std::int32_t* bias,
                           std::int8_t* qs2, float* d2, std::int32_t* bias2) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (std::size_t b = 0; b < cols / 32; ++b) {
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + b * 32 + 8 * i);
    const __m256 m01 = _mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask));
    const __m256 m23 = _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask));
    const float amax = hmax8(_mm256_max_ps(m01, m23));
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256 t[4];
    __m256i q[4];
    for (int i = 0; i < 4; ++i) {
      t[i] = _mm256_mul_ps(v[i], vid);
      q[i] = _mm256_cvtps_epi32(t[i]);
    }
    store_codes(q, qs + b * 32);
    d[b] = db;
    bias[b] = -8 * hsum8i(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    if (qs2 != nullptr) {
      __m256i r[4];
      for (int i = 0; i < 4; ++i)
        r[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(t[i], _mm256_cvtepi32_ps(q[i])), _mm256_set1_ps(254.0f)));
      store_codes(r, qs2 + b * 32);
      d2[b] = db / 254.0f;
      bias2[b] = -8 * hsum8i(_mm256_add_epi32(_mm256_add_epi32(r[0], r[1]), _mm256_add_epi32(r[2], r[3])));
    }
  }
}

template <int R>
inline void i8_rows_f32(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t n, const float* x,
                        float* y) {
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (std::size_t k = 0; k < cols; k += 8) {
    const __m256 xv = _mm256_loadu_ps(x + k);
    for (int r = 0; r < R; ++r) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + (n + r) * cols + k));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), xv, acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) y[n + r] = scale[n + r] * hsum8(acc[r]);
}

void i8_gemv_f32_avx2(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0, std::size_t r1,
                      const float* x, float* y) {
  if (cols % 8 != 0) return kScalarKernels.i8_gemv_f32(w, scale, cols, r0, r1, x, y);
  std::size_t n = r0;
  for (; n + 4 <= r1; n += 4) i8_rows_f32<4>(w, scale, cols, n, x, y);
  for (; n < r1; ++n) i8_rows_f32<1>(w, scale, cols, n, x, y);
}

template <int R>
inline void i8_rows_q8(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t n,
                       const Q8ActView& x, float* y) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (std::size_t k = 0; k < cols; k += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + k));
    const __m256 dv = _mm256_set1_ps(x.d[k / 32]);
    for (int r = 0; r < R; ++r) {
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + (n + r) * cols + k));
      const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(wv), _mm256_sign_epi8(a, wv)), ones);
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), dv, acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) y[n + r] = scale[n + r] * hsum8(acc[r]);
}

void i8_gemv_q8_avx2(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0, std::size_t r1,
                     const Q8ActView& x, float* y) {
  std::size_t n = r0;
  for (; n + 4 <= r1; n += 4) i8_rows_q8<4>(w, scale, cols, n, x, y);
  for (; n < r1; ++n) i8_rows_q8<1>(w, scale, cols, n, x, y);
}

}  // namespace

#pragma GCC pop_options

namespace ringlm::kernels {
const KernelTable kAvx2Kernels = {
    quantize_act_row_avx2,
    q4_matmul_groups_avx2,
    i8_gemv_f32_avx2,
    i8_gemv_q8_avx2,
    gelu_mul_avx2,
    soft_cap_avx2,
    nullptr,  // prepack_act: rows read in place
};
}  // namespace ringlm::kernels
#endif
