// AVX2 forms of gelu_mul and soft_cap (ref_ops.h), through activation_simd_impl.h.
// The lane-wise operations are those of the scalar tanh_inline in activation_kernels.cpp, in
// the same order (separate multiplies and adds, no FMA contraction), so every x86 path returns
// the scalar bits (tests/kernels/activation_kernels_test.cpp checks equality). Why SIMD at
// all: GELU over 64 x 6144..12288 elements per layer was 8.6% of E2B prefill as a scalar loop.
#include "kernels/kernel_table.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

#pragma GCC push_options
#pragma GCC target("avx2")
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // keep mul + add separate, as the scalar code
#endif

namespace ringlm::kernels {
namespace avx2_activations {
struct V8 {
  using F = __m256;
  static constexpr std::size_t kLanes = 8;
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F set(float v) { return _mm256_set1_ps(v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F abs(F a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static F trunc_to_int_float(F a, __m256i& i) {
    i = _mm256_cvttps_epi32(a);
    return _mm256_cvtepi32_ps(i);
  }
  static F pow2(__m256i k) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
  }
  static F select_lt(F a, F bound, F if_less, F otherwise) {
    return _mm256_blendv_ps(otherwise, if_less, _mm256_cmp_ps(a, bound, _CMP_LT_OQ));
  }
  static F copysign(F mag, F sign_of) {
    return _mm256_or_ps(mag, _mm256_and_ps(sign_of, _mm256_set1_ps(-0.0f)));
  }
  using I = __m256i;
};

#include "kernels/activation_simd_impl.h"
}  // namespace avx2_activations

void gelu_mul_avx2(const float* gate, const float* up, std::size_t n, float* out) {
  avx2_activations::gelu_mul_v<avx2_activations::V8>(gate, up, n, out);
}
void soft_cap_avx2(float* x, std::size_t n, float cap) { avx2_activations::soft_cap_v<avx2_activations::V8>(x, n, cap); }

}  // namespace ringlm::kernels

#pragma GCC pop_options
#endif
