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
};

}  // namespace
}  // namespace ringlm::kernels

#include "kernels/attention_impl.h"

namespace ringlm::kernels {
const AttentionKernels kAttnScalar = {AttnImpl<VecScalar>::block, AttnImpl<VecScalar>::exp_n};
}  // namespace ringlm::kernels
