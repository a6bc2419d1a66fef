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
  // Decode (one token): 8 heads per pass, so the K/V tile is read once for an E2B group;
  // 8 x 2 = 16 accumulators again.
  static constexpr int kDecodeRows = 8, kDecodeSlots = 2, kDecodeCols = 2;
  static constexpr int kDenseRows = 6, kDenseRegs = 4;  // attention_dense_impl.h: 24 accumulators
  // Keeps x in a register (an empty asm that "changes" it), so GCC cannot fold its load into
  // every instruction that uses it.
  static void pin(R& x) { __asm__("" : "+v"(x)); }
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
  // out[e] = hsum(v[e]) for 16 registers at once, bit for bit: _mm512_reduce_add_ps pairs
  // lane j with j+8, then j with j+4 (j < 8), then j with j+2, then 0 with 1; here the same
  // pairs are added, four registers' worth per instruction (45 instructions instead of ~110).
  // The inputs are taken in transposed order (register 4(q%4) + q/4 at step position q),
  // which is what puts sum e in output lane e.
  static void hsum16(const R* v, float* out) {
    R u[8], w[4], z[2];
    auto in = [v](int q) { return v[4 * (q % 4) + q / 4]; };
    for (int k = 0; k < 8; ++k) {  // lanes j + (j+8): the two registers' halves side by side
      const R a = in(2 * k), b = in(2 * k + 1);
      u[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    }
    for (int m = 0; m < 4; ++m)  // j + (j+4): one 128-bit block per register
      w[m] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * m], u[2 * m + 1], 0x88),
                           _mm512_shuffle_f32x4(u[2 * m], u[2 * m + 1], 0xDD));
    for (int n = 0; n < 2; ++n)  // j + (j+2): two lanes per register
      z[n] = _mm512_add_ps(_mm512_shuffle_ps(w[2 * n], w[2 * n + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(w[2 * n], w[2 * n + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // 0 + 1: one lane per register
    _mm512_storeu_ps(out, _mm512_add_ps(_mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                        _mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1))));
  }
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
#include "kernels/attention_dense_impl.h"

namespace ringlm::kernels {
using Avx512F32 = AttnImpl<VecAvx512>;
using Avx512F16 = AttnImpl<VecAvx512, std::uint16_t>;
const AttentionKernels kAttnAvx512 = {Avx512F32::block, Avx512F16::block, Avx512F32::exp_n, Avx512F32::store_f16,
                                      Avx512F32::widen_f16, DenseImpl<VecAvx512>::unit};
}  // namespace ringlm::kernels

#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
