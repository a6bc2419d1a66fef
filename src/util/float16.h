// Scalar conversions between float32 and the 16-bit float formats stored in checkpoints.
// Round-to-nearest-even in both directions that narrow, as PyTorch and ggml do.
#pragma once

#include <cstdint>
#include <cstring>

namespace ringlm {

inline float bits_to_f32(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline std::uint32_t f32_to_bits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

inline float bf16_to_f32(std::uint16_t h) { return bits_to_f32(static_cast<std::uint32_t>(h) << 16); }

inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t bits = f32_to_bits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

inline float fp16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    if (mant == 0) return bits_to_f32(sign);
    // Subnormal: value = mant * 2^-24.
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bits_to_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline std::uint16_t f32_to_fp16(float f) {
  std::uint32_t bits = f32_to_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  bits &= 0x7fffffffu;
  if (bits > 0x7f800000u) return sign | 0x7e00u;              // NaN
  if (bits >= 0x477ff000u) return sign | 0x7c00u;             // overflow (incl. inf) -> inf
  if (bits < 0x38800000u) {                                   // subnormal or zero in fp16
    if (bits < 0x33000000u) return sign;                      // below half the smallest subnormal
    const std::uint32_t mant = (bits & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(bits >> 23);      // 14..24
    std::uint32_t half = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return sign | static_cast<std::uint16_t>(half);
  }
  std::uint32_t half = ((bits >> 13) - (112u << 10));
  const std::uint32_t rem = bits & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exponent: correct
  return sign | static_cast<std::uint16_t>(half);
}

}  // namespace ringlm
