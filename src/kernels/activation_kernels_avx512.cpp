// AVX-512 forms of gelu_mul and soft_cap (ref_ops.h), through activation_simd_impl.h.
// The lane-wise operations are those of the scalar tanh_inline in activation_kernels.cpp, in
// the same order (separate multiplies and adds, no FMA contraction), so every x86 path returns
// the scalar bits (tests/kernels/activation_kernels_test.cpp checks equality). Why SIMD at
// all: GELU over 64 x 6144..12288 elements per layer was 8.6% of E2B prefill as a scalar loop.
#include "kernels/kernel_table.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

#pragma GCC push_options
// GCC 12 reports its own _mm512_undefined_* helpers as maybe-uninitialized (false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx2,avx512f,avx512dq")
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // keep mul + add separate, as the scalar code
#endif

namespace ringlm::kernels {
namespace avx512_activations {
struct V16 {
  using F = __m512;
  static constexpr std::size_t kLanes = 16;
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F set(float v) { return _mm512_set1_ps(v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F abs(F a) { return _mm512_abs_ps(a); }
  // Truncation toward zero, as static_cast<int>; then back to float.
  static F trunc_to_int_float(F a, __m512i& i) {
    i = _mm512_cvttps_epi32(a);
    return _mm512_cvtepi32_ps(i);
  }
  static F pow2(__m512i k) {  // 2^k from the exponent bits, k + 127 in [1, 254]
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k, _mm512_set1_epi32(127)), 23));
  }
  static F select_lt(F a, F bound, F if_less, F otherwise) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, bound, _CMP_LT_OQ), otherwise, if_less);
  }
  static F copysign(F mag, F sign_of) {
    const __m512i sign = _mm512_and_si512(_mm512_castps_si512(sign_of), _mm512_set1_epi32(INT32_MIN));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(mag), sign));
  }
  using I = __m512i;
};

#include "kernels/activation_simd_impl.h"
}  // namespace avx512_activations

void gelu_mul_avx512(const float* gate, const float* up, std::size_t n, float* out) {
  avx512_activations::gelu_mul_v<avx512_activations::V16>(gate, up, n, out);
}
void soft_cap_avx512(float* x, std::size_t n, float cap) {
  avx512_activations::soft_cap_v<avx512_activations::V16>(x, n, cap);
}

}  // namespace ringlm::kernels

#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
