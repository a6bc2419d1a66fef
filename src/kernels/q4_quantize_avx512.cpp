// AVX-512 form of quantize_row_q4_0_ref (q4_formats.h), bit-identical to it: the same float
// operations per element (x * id, then + 8.5, truncation, clamp at 15; no FMA contraction)
// and the same choice of scale (the signed value of the *first* element of largest
// magnitude). Quantizing E2B's linear layers at load from a bf16 checkpoint spent half its
// time in the scalar loop.
#include <cstring>

#include "kernels/q4_formats.h"
#include "util/float16.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
// GCC 12 reports its own _mm512_undefined_* helpers as maybe-uninitialized (false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx2,avx512f,avx512bw,avx512vl,avx512dq")
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace ringlm::kernels {

void quantize_row_q4_0_avx512(const float* x, BlockQ4_0* y, std::size_t k) {
  const __m512 half8 = _mm512_set1_ps(8.5f);
  const __m512i fifteen = _mm512_set1_epi32(15);
  for (std::size_t b = 0; b < k / kQBlock; ++b) {
    const float* xb = x + b * kQBlock;
    const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
    const __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
    // First element whose magnitude equals the maximum: the scalar loop's strict '<' keeps
    // the first one. (amax == 0: every element qualifies, the first is +-0, d = 0.)
    const __mmask16 m0 = _mm512_cmp_ps_mask(a0, _mm512_set1_ps(amax), _CMP_EQ_OQ);
    const __mmask16 m1 = _mm512_cmp_ps_mask(a1, _mm512_set1_ps(amax), _CMP_EQ_OQ);
    const std::uint32_t both = static_cast<std::uint32_t>(m0) | (static_cast<std::uint32_t>(m1) << 16);
    const float signed_max = both != 0 && amax != 0.0f ? xb[__builtin_ctz(both)] : 0.0f;
    const float d = signed_max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i lo = _mm512_min_epi32(_mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(v0, vid), half8)), fifteen);
    const __m512i hi = _mm512_min_epi32(_mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(v1, vid), half8)), fifteen);
    const __m512i packed = _mm512_or_si512(lo, _mm512_slli_epi32(hi, 4));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs), _mm512_cvtepi32_epi8(packed));
  }
}

}  // namespace ringlm::kernels

#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
