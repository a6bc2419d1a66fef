// gelu_mul and soft_cap on every ISA path the build and CPU have, against the scalar forms:
// the SIMD forms do the scalar operations lane by lane, so on x86 the bits must be equal
// (the subset LM head and the reference path rely on an element's value not depending on
// the path or on where it sits in the array). Elsewhere (NEON uses the scalar form) this
// checks the dispatch only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/kernel_table.h"
#include "kernels/ref_ops.h"
#include "test_support.h"

using namespace ringlm::kernels;

namespace {

// Values spanning the interesting ranges: the series branch (|u| < 1e-3), ordinary values,
// the saturation clamp (|u| >= 43 after scaling) and signed zeros.
std::vector<float> mixed_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 5);
  std::vector<float> v(n);
  for (auto& x : v) {
    switch (kind(rng)) {
      case 0: x = 1e-4f * nd(rng); break;
      case 1: x = 300.0f * nd(rng); break;
      case 2: x = (nd(rng) > 0 ? 0.0f : -0.0f); break;
      default: x = 4.0f * nd(rng); break;
    }
  }
  return v;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST(ActivationKernels, EveryPathGivesTheScalarBits) {
  ringlm::kernels::testing::IsaGuard guard;
  for (std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{1000}, std::size_t{1031}}) {
    const auto gate = mixed_values(n, 7 + static_cast<unsigned>(n));
    const auto up = mixed_values(n, 99 + static_cast<unsigned>(n));
    std::vector<float> want_gelu(n), want_cap = gate;
    gelu_mul_scalar(gate.data(), up.data(), n, want_gelu.data());
    soft_cap_scalar(want_cap.data(), n, 30.0f);
    for (Isa isa : available_isas()) {
      force_isa(isa);
      std::vector<float> got(n), cap = gate;
      gelu_mul(gate.data(), up.data(), static_cast<int>(n), got.data());
      soft_cap(cap.data(), static_cast<std::int64_t>(n), 30.0f);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(same_bits(got[i], want_gelu[i]))
            << isa_name(isa) << " gelu_mul n=" << n << " i=" << i << " x=" << gate[i] << ": " << got[i] << " vs "
            << want_gelu[i];
        ASSERT_TRUE(same_bits(cap[i], want_cap[i]))
            << isa_name(isa) << " soft_cap n=" << n << " i=" << i << " x=" << gate[i] << ": " << cap[i] << " vs "
            << want_cap[i];
      }
      // In place (out aliases gate), as the model calls it.
      std::vector<float> inplace = gate;
      gelu_mul(inplace.data(), up.data(), static_cast<int>(n), inplace.data());
      for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(inplace[i], want_gelu[i])) << isa_name(isa) << " i=" << i;
    }
  }
}

// The scalar forms against float64 (PyTorch's tanh-approximated GELU; cap * tanh(x / cap)).
TEST(ActivationKernels, ScalarFormsMatchFloat64) {
  const std::size_t n = 4096;
  const auto gate = mixed_values(n, 3), up = mixed_values(n, 4);
  std::vector<float> got(n), cap = gate;
  gelu_mul_scalar(gate.data(), up.data(), n, got.data());
  soft_cap_scalar(cap.data(), n, 30.0f);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = gate[i];
    const double g = 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))) * up[i];
    ASSERT_NEAR(got[i], g, 1e-6 * std::abs(g) + 1e-6 * std::abs(x * up[i]) + 1e-30) << "x=" << x << " up=" << up[i];
    const double c = 30.0 * std::tanh(x / 30.0);
    ASSERT_NEAR(cap[i], c, 1e-6 * std::abs(c) + 1e-5) << "x=" << x;
  }
}
