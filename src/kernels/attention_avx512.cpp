// attention.h kernels for AVX-512 F (16 floats per register); the code is attention_impl.h.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/attention_table.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
// GCC 12 reports its own _mm512_undefined_* helpers (behind _mm512_reduce_*) as
// (maybe-)uninitialized: a false positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")

namespace ringlm::kernels {
namespace {

struct VecAvx512 {
  using R = __m512;
  static constexpr int W = 16;
  static constexpr int kSlots = 4, kCols = 4;  // 16 accumulators of 32 registers
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float x) { return _mm512_set1_ps(x); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R x) { _mm512_storeu_ps(p, x); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R min(R a, R b) { return _mm512_min_ps(a, b); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static float hsum(R a) { return _mm512_reduce_add_ps(a); }
  static float hmax(R a) { return _mm512_reduce_max_ps(a); }
  static R round(R a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static R pow2i(R k) {
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127)), 23);
    return _mm512_castsi512_ps(e);
  }
  static R zero_below(R x, R t, R y) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, t, _CMP_GE_OQ), y); }
  static R load_half(const std::uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store_half(std::uint16_t* p, R x) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

}  // namespace
}  // namespace ringlm::kernels

#include "kernels/attention_impl.h"

namespace ringlm::kernels {
using Avx512F32 = AttnImpl<VecAvx512>;
using Avx512F16 = AttnImpl<VecAvx512, std::uint16_t>;
const AttentionKernels kAttnAvx512 = {Avx512F32::block, Avx512F16::block, Avx512F32::exp_n, Avx512F32::store_f16,
                                      Avx512F32::widen_f16};
}  // namespace ringlm::kernels

#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
