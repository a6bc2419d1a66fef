// The tanh-based activations (declared in ref_ops.h): a vectorizable tanh, GELU (tanh
// form) times the up projection, and the logit soft cap. The scalar forms here are the
// reference; gelu_mul and soft_cap run the active ISA path's form (kernel_table.h), which
// on x86 gives the same bits (activation_kernels_avx2.cpp, activation_kernels_avx512.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"
#include "kernels/ref_ops.h"
#include "kernels/ref_parallel.h"

namespace ringlm::kernels {

namespace {
inline float tanh_inline(float u) {
  // tanh(u) = sign(u) (1 - e) / (1 + e) with e = exp(-2|u|) in (0, 1]. exp by range
  // reduction, -2|u| = k ln2 + r with |r| <= ~ln2/2, and a degree-6 Taylor polynomial
  // (relative error ~1e-7); 2^k is built in the exponent bits. No calls and no branches, so
  // loops over it vectorize with the baseline ISA (a libm tanhf call per element was 15% of
  // E2B prefill), and every element gets the same operations wherever it sits in a loop.
  const float a = std::min(std::fabs(u), 43.0f);  // e underflows to ~1e-38 at 43: tanh = 1
  const float x = -2.0f * a;
  const float kf = static_cast<float>(static_cast<int>(x * 1.44269504088896341f - 0.5f));  // round, x <= 0
  const float r = (x - kf * 0.693145751953125f) - kf * 1.428606765330187e-06f;  // ln2 split hi + lo
  const float p =
      1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
  const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<int>(kf) + 127) << 23;
  float two_k;
  std::memcpy(&two_k, &bits, sizeof two_k);
  const float e = p * two_k;
  // Near 0, 1 - e cancels: use the series there (u^5 term < 1e-16 for |u| < 1e-3).
  const float t = a < 1e-3f ? a * (1.0f - a * a * (1.0f / 3)) : (1.0f - e) / (1.0f + e);
  return std::copysign(t, u);
}
}  // namespace

float tanh_fast(float u) { return tanh_inline(u); }

namespace {
inline float gelu_inline(float x) {
  constexpr float k = 0.7978845608028654f;  // sqrt(2/pi)
  return 0.5f * x * (1.0f + tanh_inline(k * (x + 0.044715f * x * x * x)));
}
}  // namespace

float gelu_tanh(float x) { return gelu_inline(x); }

void gelu_mul_scalar(const float* gate, const float* up, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = gelu_inline(gate[i]) * up[i];
}

void soft_cap_scalar(float* x, std::size_t n, float cap) {
  const float inv = 1.0f / cap;
  for (std::size_t i = 0; i < n; ++i) x[i] = cap * tanh_inline(x[i] * inv);
}

void gelu_mul(const float* gate, const float* up, int n, float* out) {
  if (n > 0) active_kernels().gelu_mul(gate, up, static_cast<std::size_t>(n), out);
}

void soft_cap(float* x, std::int64_t n, float cap) {
  if (n > 0) active_kernels().soft_cap(x, static_cast<std::size_t>(n), cap);
}

void soft_cap(float* x, std::int64_t n, float cap, ParallelFor* pool) {
  constexpr std::int64_t kSlice = 4096;
  if (pool == nullptr || pool->size() <= 1 || n <= kSlice) return soft_cap(x, n, cap);
  pool->run((n + kSlice - 1) / kSlice, [&](std::int64_t s0, std::int64_t s1) {
    const std::int64_t end = std::min(n, s1 * kSlice);
    soft_cap(x + s0 * kSlice, end - s0 * kSlice, cap);
  });
}

}  // namespace ringlm::kernels
