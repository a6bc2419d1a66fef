// out[t * y_stride + r] = sum over blocks of d_w * d_x * (int8 dot product of the block's
// codes): the int8 path of q4p16 and Q8_0 matrices (backend::Weight::int8_activations), run
// where the device has VK_KHR_shader_integer_dot_product (OpSDot on 4 x 8-bit packed words,
// emitted through GL_EXT_spirv_intrinsics since Debian's glslang lacks
// GL_EXT_integer_dot_product). The activations were quantized by quantize_q8.comp. Integer
// sums are exact; the float32 error is that of the activation rounding (docs/backends.md).
// One workgroup per 16 output rows and input row t; thread (r, lane) of 16 x 16 sums the
// blocks lane, lane + 16, ... of row r, then the 16 lanes are added in shared memory.
#version 450
#extension GL_EXT_spirv_intrinsics : require

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer Quantized { uint xq[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };

layout(constant_id = 0) const uint kKind = 0u;  // 0: q4p16, 1: Q8_0 blocks as a GGUF file stores them

layout(push_constant) uniform Params {
  uint rows;
  uint cols;
  uint q_off;     // words: the quantized activations of input row 0 (9 words per block)
  uint y_off;
  uint y_stride;  // floats between output rows of consecutive tokens
  uint row_bytes; // Q8_0: bytes of one weight row
} p;

// OpSDot (4450) with PackedVectorFormat4x8Bit: the signed dot product of two words of four int8.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019], id = 4450)
int sdot4x8(int a, int b, spirv_literal int packed_format);

shared float partial[256];

uint byte_at(uint b) { return (w[b >> 2u] >> ((b & 3u) << 3u)) & 0xFFu; }
uint u32_at(uint b) {
  const uint s = (b & 3u) << 3u;
  const uint lo = w[b >> 2u];
  return s == 0u ? lo : (lo >> s) | (w[(b >> 2u) + 1u] << (32u - s));
}

// Four 4-bit codes (one per byte, 0..15) to four int8 values code - 8: flip bit 3, then
// sign-extend the nibble (bit 3 set gives 0xF0 in the byte's high half; no carries).
uint q4_signed(uint nibbles) {
  const uint m = nibbles ^ 0x08080808u;
  return m | ((m & 0x08080808u) * 0x1Eu);
}

float q4_block(uint base, uint nb, uint b, uint r, uint qb) {
  const uint half_index = b * 16u + r;
  const uint sw = w[base + nb * 64u + half_index / 2u];
  const float d = unpackHalf2x16(sw).x * float(1u - (half_index & 1u)) + unpackHalf2x16(sw).y * float(half_index & 1u);
  int s = 0;
  for (uint t = 0u; t < 4u; ++t) {
    const uint code = w[base + (b * 4u + t) * 16u + r];  // byte k: value 4t + k low, 16 + 4t + k high
    s += sdot4x8(int(q4_signed(code & 0x0F0F0F0Fu)), int(xq[qb + t]), 0);
    s += sdot4x8(int(q4_signed((code >> 4u) & 0x0F0F0F0Fu)), int(xq[qb + 4u + t]), 0);
  }
  return d * uintBitsToFloat(xq[qb + 8u]) * float(s);
}

float q8_block(uint rb, uint b, uint qb) {
  const uint at = rb + b * 34u;
  int s = 0;
  for (uint i = 0u; i < 8u; ++i) s += sdot4x8(int(u32_at(at + 2u + 4u * i)), int(xq[qb + i]), 0);
  const float d = unpackHalf2x16(byte_at(at) | (byte_at(at + 1u) << 8u)).x;
  return d * uintBitsToFloat(xq[qb + 8u]) * float(s);
}

void main() {
  const uint r = gl_LocalInvocationID.x % 16u;
  const uint lane = gl_LocalInvocationID.x / 16u;
  const uint g = gl_WorkGroupID.x;
  const uint tok = gl_WorkGroupID.y;
  const uint row = g * 16u + r;
  const uint nb = p.cols / 32u;
  const uint qrow = p.q_off + tok * nb * 9u;
  float acc = 0.0;
  if (kKind == 0u) {
    const uint base = g * nb * 72u;  // 288 bytes per block of 16 rows; padding rows are zeros
    for (uint b = lane; b < nb; b += 16u) acc += q4_block(base, nb, b, r, qrow + b * 9u);
  } else if (row < p.rows) {
    for (uint b = lane; b < nb; b += 16u) acc += q8_block(row * p.row_bytes, b, qrow + b * 9u);
  }
  partial[gl_LocalInvocationID.x] = acc;
  barrier();
  for (uint s = 8u; s > 0u; s >>= 1u) {
    if (lane < s) partial[lane * 16u + r] += partial[(lane + s) * 16u + r];
    barrier();
  }
  if (lane == 0u && row < p.rows) y[p.y_off + tok * p.y_stride + row] = partial[r];
}
