// The tiled q4p16 matmul with binary16 shared tiles (RINGLM_VULKAN_FP16=1 where the device
// has shaderFloat16; matmul_tiled.glsl says what and why). Each input value is rounded to
// binary16 by f16_round.glsl (nearest even, clamped to +-65504: the same rounding as the KV
// cache), so the tile holds the same value on every device; the float16_t conversion of that
// exactly representable value is exact. Products and sums stay float32.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

#include "f16_round.glsl"
#define TILE_T float16_t
#define load_x(i) unpackHalf2x16(f32_to_f16_bits(x[i])).x
#include "matmul_tiled.glsl"
