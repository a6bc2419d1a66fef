// attention.h kernels in plain C++ (eight-float "registers" the compiler vectorises with the
// baseline ISA): the fallback on any CPU, the same algorithm and exp as the SIMD paths
// (attention_impl.h).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/attention_table.h"

namespace ringlm::kernels {
namespace {

// Four floats as a GCC/clang generic vector: the compiler lowers it to whatever the
// baseline ISA has (one SSE2 register on x86-64, plain floats elsewhere). Rounding uses the
// 1.5 * 2^23 trick instead of nearbyint (a libm call per lane without SSE4.1): exact for
// |x| < 2^22 in the default round-to-nearest-even mode (exp clamps to [-88, 88] first), and
// not folded away since the build has no -ffast-math. Vector casts between same-size vector
// types reinterpret the bits.
typedef float F4 __attribute__((vector_size(16)));
typedef std::int32_t I4 __attribute__((vector_size(16)));

struct VecScalar {
  using R = F4;
  static constexpr int W = 4;
  static constexpr int kSlots = 2, kCols = 2;  // 4 rows x 2 = 8 accumulators of 16 registers
  static constexpr int kDenseRows = 4, kDenseRegs = 2;  // attention_dense_impl.h: 8 accumulators
  static R zero() { return set1(0.0f); }
  static R set1(float x) { return R{x, x, x, x}; }
  static R load(const float* p) {
    R r;
    std::memcpy(&r, p, sizeof r);
    return r;
  }
  static void store(float* p, R x) { std::memcpy(p, &x, sizeof x); }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, R b) { return a * b; }
  static R fma(R a, R b, R c) { return a * b + c; }  // not fused (no FMA in the baseline ISA)
  static R min(R a, R b) { return a < b ? a : b; }
  static R max(R a, R b) { return a > b ? a : b; }
  static float hsum(R a) { return (a[0] + a[2]) + (a[1] + a[3]); }
  static float hmax(R a) { return std::max(std::max(a[0], a[1]), std::max(a[2], a[3])); }
  static R round(R a) {
    const R magic = set1(12582912.0f);  // 1.5 * 2^23
    return (a + magic) - magic;
  }
  static R pow2i(R k) { return (R)((__builtin_convertvector(k, I4) + 127) << 23); }
  static R zero_below(R x, R t, R y) { return (R)((I4)y & (x >= t)); }  // x >= t: lanes of -1 or 0
  // binary16 -> f32 in vector integer ops: the half's exponent and mantissa shifted into
  // place read as a float 2^-112 times the value (a half subnormal lands on a float
  // subnormal with the same bits scaled), so one exact multiply by 2^112 finishes normals and
  // subnormals alike; inf/NaN (exponent 31) get the float's all-ones exponent; then the sign.
  static R load_half(const std::uint16_t* p) {
    const I4 h = {p[0], p[1], p[2], p[3]};
    const I4 mag = (h & 0x7fff) << 13;
    const R scaled = (R)mag * set1(0x1p112f);
    const I4 special = (h & 0x7c00) == 0x7c00;  // lanes of -1 or 0
    const I4 bits = ((I4)scaled & ~special) | ((mag | 0x7f800000) & special);
    return (R)(bits | ((h & 0x8000) << 16));
  }
  static void store_half(std::uint16_t* p, R x) {
    for (int i = 0; i < W; ++i) p[i] = f32_to_fp16(x[i]);
  }
};

}  // namespace
}  // namespace ringlm::kernels

#include "kernels/attention_impl.h"
#include "kernels/attention_dense_impl.h"

namespace ringlm::kernels {
using ScalarF32 = AttnImpl<VecScalar>;
using ScalarF16 = AttnImpl<VecScalar, std::uint16_t>;
const AttentionKernels kAttnScalar = {ScalarF32::block, ScalarF16::block, ScalarF32::exp_n, ScalarF32::store_f16,
                                      ScalarF32::widen_f16, DenseImpl<VecScalar>::unit};
}  // namespace ringlm::kernels
