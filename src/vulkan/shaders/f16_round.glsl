// binary16 bits of clamp(f, -65504, 65504), rounded to nearest even: the same bits as
// kernels::kv_store_f16 (GLSL's packHalf2x16 leaves the rounding to the implementation).
uint f32_to_f16_bits(float f) {
  const uint x = floatBitsToUint(clamp(f, -65504.0, 65504.0));
  const uint sign = (x >> 16u) & 0x8000u;
  const uint ax = x & 0x7FFFFFFFu;
  if (ax < 0x38800000u) {  // below 2^-14: a subnormal half (or zero), m * 2^-24
    const float v = uintBitsToFloat(ax) * 16777216.0;  // exact: a power-of-two scaling
    return sign | uint(roundEven(v));                  // 1024 is the smallest normal, correctly
  }
  uint h = (ax - 0x38000000u) >> 13u;  // rebias the exponent 127 -> 15, keep 10 mantissa bits
  const uint rem = ax & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) == 1u)) h += 1u;
  return sign | h;
}
