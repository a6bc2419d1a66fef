// attention.h kernels in plain C++ (one float per "register"): the fallback on any CPU, the
// same algorithm and exp as the SIMD paths (attention_impl.h), only narrower.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/attention_table.h"

namespace ringlm::kernels {
namespace {

struct VecScalar {
  using R = float;
  static constexpr int W = 1;
  static constexpr int kSlots = 4, kCols = 4;
  static R zero() { return 0.0f; }
  static R set1(float x) { return x; }
  static R load(const float* p) { return *p; }
  static void store(float* p, R x) { *p = x; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, R b) { return a * b; }
  static R fma(R a, R b, R c) { return a * b + c; }  // not fused: std::fma is a libm call without FMA
  static R min(R a, R b) { return std::min(a, b); }
  static R max(R a, R b) { return std::max(a, b); }
  static float hsum(R a) { return a; }
  static float hmax(R a) { return a; }
  static R round(R a) { return std::nearbyint(a); }
  static R pow2i(R k) {
    const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<int>(k) + 127) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  static R zero_below(R x, R t, R y) { return x >= t ? y : 0.0f; }
};

}  // namespace
}  // namespace ringlm::kernels

#include "kernels/attention_impl.h"

namespace ringlm::kernels {
const AttentionKernels kAttnScalar = {AttnImpl<VecScalar>::block, AttnImpl<VecScalar>::exp_n};
}  // namespace ringlm::kernels
