// Shared helpers for the kernel tests: random data with extreme blocks, a float64 reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/q4_formats.h"
#include "kernels/q8_act.h"
#include "util/float16.h"

namespace ringlm::kernels::testing {

// Restores the ISA path that was active when it was created.
class IsaGuard {
 public:
  IsaGuard() : saved_(active_isa()) {}
  ~IsaGuard() { force_isa(saved_); }

 private:
  Isa saved_;
};

// Random ggml q4_0 blocks for a [rows, cols] matrix. Every 7th block is an extreme one
// (cycled): fp16-subnormal scale, the largest finite fp16 scale, zero scale, all codes 0
// (-8), all codes 15 (+7), negative scale.
inline std::vector<BlockQ4_0> random_q4_blocks(std::size_t rows, std::size_t cols, std::mt19937& rng) {
  std::vector<BlockQ4_0> blocks(rows * cols / 32);
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> scale(0.0f, 0.02f);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    BlockQ4_0& b = blocks[i];
    for (auto& q : b.qs) q = static_cast<std::uint8_t>(byte(rng));
    b.d = f32_to_fp16(scale(rng));
    if (i % 7 == 3) {
      switch ((i / 7) % 6) {
        case 0: b.d = 0x0001; break;   // 2^-24, smallest subnormal
        case 1: b.d = 0x7bff; break;   // 65504
        case 2: b.d = 0x0000; break;
        case 3: for (auto& q : b.qs) q = 0x00; break;
        case 4: for (auto& q : b.qs) q = 0xff; break;
        case 5: b.d = 0xfbff; break;   // -65504
      }
    }
  }
  return blocks;
}

// Random activations with extreme blocks: zeros, tiny (1e-30), huge (1e20), a single
// spike, and a block whose values all sit at +-amax.
inline std::vector<float> random_activations(std::size_t rows, std::size_t cols, std::mt19937& rng) {
  std::vector<float> x(rows * cols);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (auto& v : x) v = n(rng);
  for (std::size_t b = 0; b < x.size() / 32; ++b) {
    float* xb = x.data() + b * 32;
    if (b % 5 != 2) continue;
    switch ((b / 5) % 5) {
      case 0: for (int j = 0; j < 32; ++j) xb[j] = 0.0f; break;
      case 1: for (int j = 0; j < 32; ++j) xb[j] *= 1e-30f; break;
      case 2: for (int j = 0; j < 32; ++j) xb[j] *= 1e20f; break;
      case 3: for (int j = 0; j < 32; ++j) xb[j] = j == 5 ? -3.0f : 0.001f * xb[j]; break;
      case 4: for (int j = 0; j < 32; ++j) xb[j] = (j % 2 ? 2.5f : -2.5f); break;
    }
  }
  return x;
}

// float64 value of one w4a8 output from the ggml blocks of one weight row and one
// quantized activation row, and the sum of the magnitudes of its block terms (the scale
// for rounding tolerances).
struct RefDot {
  double value = 0.0, magnitude = 0.0;
};
inline RefDot ref_q4_dot(const BlockQ4_0* wrow, const std::int8_t* q, const float* d, std::size_t cols) {
  RefDot r;
  for (std::size_t b = 0; b < cols / 32; ++b) {
    double s = 0.0;
    for (int j = 0; j < 16; ++j) {
      s += double((wrow[b].qs[j] & 0x0f) - 8) * q[b * 32 + j];
      s += double((wrow[b].qs[j] >> 4) - 8) * q[b * 32 + 16 + j];
    }
    const double term = double(fp16_to_f32(wrow[b].d)) * double(d[b]) * s;
    r.value += term;
    r.magnitude += std::fabs(term);
  }
  return r;
}

// The same for two-plane activations: element value d2 * (254 q + q2).
inline RefDot ref_q4_dot2(const BlockQ4_0* wrow, const std::int8_t* q, const std::int8_t* q2, const float* d2,
                          std::size_t cols) {
  RefDot r;
  for (std::size_t b = 0; b < cols / 32; ++b) {
    double s = 0.0;
    for (int j = 0; j < 32; ++j) {
      const int code = j < 16 ? (wrow[b].qs[j] & 0x0f) : (wrow[b].qs[j - 16] >> 4);
      s += double(code - 8) * (254.0 * q[b * 32 + j] + q2[b * 32 + j]);
    }
    const double term = double(fp16_to_f32(wrow[b].d)) * double(d2[b]) * s;
    r.value += term;
    r.magnitude += std::fabs(term);
  }
  return r;
}

// Allowed difference between a float32 kernel result and the float64 value: a few float
// roundings per block term, plus an absolute floor for results in the subnormal range.
inline double tolerance(const RefDot& r, std::size_t blocks) {
  return 6e-8 * (4.0 + double(blocks)) * r.magnitude + 1e-36;
}

}  // namespace ringlm::kernels::testing
