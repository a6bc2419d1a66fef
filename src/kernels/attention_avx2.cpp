// attention.h kernels for AVX2 + FMA (8 floats per register); the code is attention_impl.h.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/attention_table.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace ringlm::kernels {
namespace {

struct VecAvx2 {
  using R = __m256;
  static constexpr int W = 8;
  static constexpr int kSlots = 2, kCols = 2;  // 4 rows x 2 = 8 accumulators of 16 registers
  static constexpr int kDenseRows = 4, kDenseRegs = 2;  // attention_dense_impl.h: 8 accumulators
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R x) { _mm256_storeu_ps(p, x); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R min(R a, R b) { return _mm256_min_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static float hsum(R a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmax(R a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static R round(R a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static R pow2i(R k) {
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_castsi256_ps(e);
  }
  static R zero_below(R x, R t, R y) { return _mm256_and_ps(y, _mm256_cmp_ps(x, t, _CMP_GE_OQ)); }
  static R load_half(const std::uint16_t* p) {  // F16C
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void store_half(std::uint16_t* p, R x) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

}  // namespace
}  // namespace ringlm::kernels

#include "kernels/attention_impl.h"
#include "kernels/attention_dense_impl.h"

namespace ringlm::kernels {
using Avx2F32 = AttnImpl<VecAvx2>;
using Avx2F16 = AttnImpl<VecAvx2, std::uint16_t>;
const AttentionKernels kAttnAvx2 = {Avx2F32::block, Avx2F16::block, Avx2F32::exp_n, Avx2F32::store_f16,
                                    Avx2F32::widen_f16, DenseImpl<VecAvx2>::unit};
}  // namespace ringlm::kernels

#pragma GCC pop_options
#endif
