// AVX-VNNI (the 256-bit VEX form of vpdpbusd: Intel Alder Lake and later client cores, which
// have no AVX-512) for the q4_0 x q8 matmul; the rest of the table is the AVX2 one.
//
// Same packed layout as the AVX2 kernel: a 64-byte line of codes is two 32-byte halves
// (rows 0-7 and 8-15 of the group), and vpdpbusd against the activation's 4 bytes broadcast
// gives 8 rows' partial sums directly in int32 (AVX2 needs vpmaddubsw + vpaddw + vpmaddwd).
// With only 16 ymm registers a tile of several activation rows runs one half at a time over
// its K range (2 code vectors, MT or 2*MT int32 chains, MT float accumulators); a GEMV does
// both halves per block.
// Integer sums are exact and the float steps those of the scalar kernel, so results match
// every other path's to rounding of the same operations (tests run it against float64).
#include <cstring>

#include "kernels/kernel_table.h"

// Activation rows per tile (measured: see docs/bench/kernels.md).
#define RINGLM_AVXVNNI_TILE_ROWS 4

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
#include <immintrin.h>

namespace {

using namespace ringlm::kernels;

inline __m256i bcast4(const std::int8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// acc[hh * MT + i] += rows 8(h0+hh)..8(h0+hh)+7 of the group . activation row m0 + i, over
// blocks [b0, b1), for the NH halves from h0. A GEMV (MT = 1) takes both halves per block so
// the code stream is read front to back once; tiles take one half at a time (registers).
template <int MT, int NH, bool kTwoPlanes>
inline void half_rows(const std::uint8_t* codes, const std::uint16_t* scales, int h0, std::size_t b0, std::size_t b1,
                      const Q8ActView& x, std::size_t m0, __m256 acc[NH * MT]) {
  const __m256i mask = _mm256_set1_epi8(0x0f);
  const std::size_t nbx = x.cols / 32;
  for (std::size_t b = b0; b < b1; ++b) {
    const std::uint8_t* cb = codes + b * 256;
    _mm_prefetch(reinterpret_cast<const char*>(cb + 2048), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(cb + 2048 + 64), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(cb + 2048 + 128), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(cb + 2048 + 192), _MM_HINT_T0);
    // The fp16 scales sit after all of a group's codes, so the code prefetch reaches them only
    // near the group's end: their own stream, the same blocks ahead (as the VNNI GEMV, 320832c).
    _mm_prefetch(reinterpret_cast<const char*>(scales + b * 16) + 2048 / 8, _MM_HINT_T0);
#pragma GCC unroll 2
    for (int hh = 0; hh < NH; ++hh) {
      const int h = h0 + hh;
      __m256i s1[MT], s2[MT];
#pragma GCC unroll 8
      for (int i = 0; i < MT; ++i) {
        const std::size_t xb = (m0 + i) * nbx + b;
        s1[i] = _mm256_set1_epi32(x.bias[xb]);
        if (kTwoPlanes) s2[i] = _mm256_set1_epi32(x.bias2[xb]);
      }
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cb + 64 * t + 32 * h));
        const __m256i lo = _mm256_and_si256(raw, mask);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask);
#pragma GCC unroll 8
        for (int i = 0; i < MT; ++i) {
          const std::int8_t* a = x.qs + (m0 + i) * x.cols + b * 32;
          s1[i] = _mm256_dpbusd_avx_epi32(s1[i], lo, bcast4(a + 4 * t));
          s1[i] = _mm256_dpbusd_avx_epi32(s1[i], hi, bcast4(a + 16 + 4 * t));
          if (kTwoPlanes) {
            const std::int8_t* a2 = x.qs2 + (m0 + i) * x.cols + b * 32;
            s2[i] = _mm256_dpbusd_avx_epi32(s2[i], lo, bcast4(a2 + 4 * t));
            s2[i] = _mm256_dpbusd_avx_epi32(s2[i], hi, bcast4(a2 + 16 + 4 * t));
          }
        }
      }
      const __m256 ws = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + b * 16 + 8 * h)));
#pragma GCC unroll 8
      for (int i = 0; i < MT; ++i) {
        const std::size_t xb = (m0 + i) * nbx + b;
        __m256 f;
        float xd;
        if (kTwoPlanes) {
          // |254 * s1 + s2| < 2^24 (|s| <= 32 * 8 * 127 per plane): exact in float.
          f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1[i]), _mm256_set1_ps(254.0f), _mm256_cvtepi32_ps(s2[i]));
          xd = x.d2[xb];
        } else {
          f = _mm256_cvtepi32_ps(s1[i]);
          xd = x.d[xb];
        }
        acc[hh * MT + i] = _mm256_fmadd_ps(_mm256_mul_ps(f, ws), _mm256_set1_ps(xd), acc[hh * MT + i]);
      }
    }
  }
}

// Output rows of group g for activation rows m0..m0+MT over blocks [b0, b1); adds to what y
// holds when `accumulate` (later K chunks), else overwrites it.
template <int MT>
inline void group_tile(const Q4Packed& w, std::size_t g, std::size_t b0, std::size_t b1, bool accumulate,
                       const Q8ActView& x, std::size_t m0, float* y, std::size_t ldy) {
  constexpr int kNH = MT == 1 ? 2 : 1;  // halves per pass
  const std::size_t n0 = g * kQ4GroupRows;
  const std::size_t valid = w.rows - n0 < kQ4GroupRows ? w.rows - n0 : kQ4GroupRows;
  for (int h0 = 0; h0 < 2; h0 += kNH) {
    __m256 acc[kNH * MT];
    for (int hh = 0; hh < kNH; ++hh)
      for (int i = 0; i < MT; ++i) {
        acc[hh * MT + i] = _mm256_setzero_ps();
        const std::size_t r0 = 8 * static_cast<std::size_t>(h0 + hh);
        if (accumulate && r0 < valid) {
          alignas(32) float tmp[8] = {};
          std::memcpy(tmp, y + (m0 + i) * ldy + n0 + r0, (valid - r0 < 8 ? valid - r0 : 8) * sizeof(float));
          acc[hh * MT + i] = _mm256_load_ps(tmp);
        }
      }
    if (x.qs2 != nullptr) half_rows<MT, kNH, true>(w.group_codes(g), w.group_scales(g), h0, b0, b1, x, m0, acc);
    else half_rows<MT, kNH, false>(w.group_codes(g), w.group_scales(g), h0, b0, b1, x, m0, acc);
    for (int hh = 0; hh < kNH; ++hh) {
      const std::size_t r0 = 8 * static_cast<std::size_t>(h0 + hh);
      if (r0 >= valid) continue;  // padding rows: computed (zero codes), never stored
      const std::size_t cnt = valid - r0 < 8 ? valid - r0 : 8;
      for (int i = 0; i < MT; ++i) {
        float* out = y + (m0 + i) * ldy + n0 + r0;
        if (cnt == 8) {
          _mm256_storeu_ps(out, acc[hh * MT + i]);
        } else {
          alignas(32) float tmp[8];
          _mm256_store_ps(tmp, acc[hh * MT + i]);
          std::memcpy(out, tmp, cnt * sizeof(float));
        }
      }
    }
  }
}

template <int MT>
inline void group_tail(const Q4Packed& w, std::size_t g, std::size_t b0, std::size_t b1, bool accumulate,
                       const Q8ActView& x, std::size_t m0, std::size_t left, float* y, std::size_t ldy) {
  if (left == MT) return group_tile<MT>(w, g, b0, b1, accumulate, x, m0, y, ldy);
  if constexpr (MT > 1) group_tail<MT - 1>(w, g, b0, b1, accumulate, x, m0, left, y, ldy);
}

void q4_matmul_groups_avxvnni(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                              std::size_t ldy) {
  constexpr std::size_t kMT = RINGLM_AVXVNNI_TILE_ROWS;
  // As on AVX-512: with several tiles, cut K into 64-block chunks so a group's codes are
  // re-read from L1.
  const std::size_t nb = w.blocks_per_row();
  const std::size_t kchunk = x.rows > kMT ? 64 : nb;
  for (std::size_t g = g0; g < g1; ++g) {
    for (std::size_t b0 = 0; b0 < nb; b0 += kchunk) {
      const std::size_t b1 = b0 + kchunk < nb ? b0 + kchunk : nb;
      const bool accumulate = b0 != 0;
      std::size_t m = 0;
      for (; m + kMT <= x.rows; m += kMT) group_tile<kMT>(w, g, b0, b1, accumulate, x, m, y, ldy);
      if (m < x.rows) group_tail<kMT - 1>(w, g, b0, b1, accumulate, x, m, x.rows - m, y, ldy);
    }
  }
}

}  // namespace

#pragma GCC pop_options

namespace ringlm::kernels {
// Everything but the q4 matmul is the AVX2 table's (read at dynamic initialisation: the AVX2
// table is constant-initialised, so it is ready by then).
const KernelTable kAvxVnniKernels = {
    kAvx2Kernels.quantize_act_row, q4_matmul_groups_avxvnni, kAvx2Kernels.i8_gemv_f32,
    kAvx2Kernels.i8_gemv_q8,       kAvx2Kernels.gelu_mul,    kAvx2Kernels.soft_cap,
    nullptr,  // prepack_act: rows read in place
};
}  // namespace ringlm::kernels
#endif
