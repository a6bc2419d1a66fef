#include "kernels/q4_formats.h"

#include <algorithm>
#include <cmath>

#include "util/float16.h"

namespace ringlm::kernels {

void quantize_row_q4_0_ref(const float* x, BlockQ4_0* y, std::size_t k) {
  const std::size_t nb = k / kQBlock;
  for (std::size_t b = 0; b < nb; ++b) {
    const float* xb = x + b * kQBlock;
    // Largest magnitude, keeping its sign; strict '<' keeps the first one on ties.
    float amax = 0.0f, signed_max = 0.0f;
    for (std::size_t j = 0; j < kQBlock; ++j) {
      if (amax < std::fabs(xb[j])) {
        amax = std::fabs(xb[j]);
        signed_max = xb[j];
      }
    }
    const float d = signed_max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    for (std::size_t j = 0; j < 16; ++j) {
      // x*id lies in [-8, 8] (up to rounding), so x*id + 8.5 is positive and the integer
      // conversion truncates it: round-half-up of x*id, offset by 8; only +8 needs the clamp.
      const int lo = std::min(15, static_cast<int>(xb[j] * id + 8.5f));
      const int hi = std::min(15, static_cast<int>(xb[j + 16] * id + 8.5f));
      y[b].qs[j] = static_cast<std::uint8_t>(lo | (hi << 4));
    }
  }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, std::size_t k) {
  const std::size_t nb = k / kQBlock;
  for (std::size_t b = 0; b < nb; ++b) {
    const float d = fp16_to_f32(x[b].d);
    for (std::size_t j = 0; j < 16; ++j) {
      y[b * kQBlock + j] = d * static_cast<float>((x[b].qs[j] & 0x0f) - 8);
      y[b * kQBlock + j + 16] = d * static_cast<float>((x[b].qs[j] >> 4) - 8);
    }
  }
}

void quantize_row_q8_0_ref(const float* x, BlockQ8_0* y, std::size_t k) {
  const std::size_t nb = k / kQBlock;
  for (std::size_t b = 0; b < nb; ++b) {
    const float* xb = x + b * kQBlock;
    float amax = 0.0f;
    for (std::size_t j = 0; j < kQBlock; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    for (std::size_t j = 0; j < kQBlock; ++j)
      y[b].qs[j] = static_cast<std::int8_t>(std::nearbyint(xb[j] * id));
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, std::size_t k) {
  const std::size_t nb = k / kQBlock;
  for (std::size_t b = 0; b < nb; ++b) {
    const float d = fp16_to_f32(x[b].d);
    for (std::size_t j = 0; j < kQBlock; ++j) y[b * kQBlock + j] = d * static_cast<float>(x[b].qs[j]);
  }
}

float quantize_row_i8(const float* x, std::int8_t* q, std::size_t k) {
  float amax = 0.0f;
  for (std::size_t j = 0; j < k; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float scale = amax / 127.0f;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  for (std::size_t j = 0; j < k; ++j) {
    const float r = std::nearbyint(x[j] * inv);
    q[j] = static_cast<std::int8_t>(std::clamp(r, -127.0f, 127.0f));
  }
  return scale;
}

void dequantize_row_i8(const std::int8_t* q, float scale, float* y, std::size_t k) {
  for (std::size_t j = 0; j < k; ++j) y[j] = scale * static_cast<float>(q[j]);
}

}  // namespace ringlm::kernels
