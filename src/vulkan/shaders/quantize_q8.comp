// Activations to int8 for the int8 dot-product matmul (matmul_q8.comp): every block of 32
// floats becomes 8 words of signed int8 codes (word w: values 4w .. 4w + 3, low byte first)
// and its float32 scale d = max|x| / 127, code = roundEven(x / d) (0 for an all-zero block).
// One thread per block.
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Input { float x[]; };
layout(std430, binding = 1) writeonly buffer Output { uint q[]; };

layout(push_constant) uniform Params {
  uint blocks;  // rows * cols / 32
  uint x_off;   // words
  uint q_off;   // words; 9 per block
} p;

void main() {
  const uint blk = gl_WorkGroupID.x * 256u + gl_LocalInvocationID.x;
  if (blk >= p.blocks) return;
  const uint xb = p.x_off + blk * 32u;
  float amax = 0.0;
  for (uint i = 0u; i < 32u; ++i) amax = max(amax, abs(x[xb + i]));
  const float d = amax / 127.0;
  const float id = d != 0.0 ? 1.0 / d : 0.0;
  const uint ob = p.q_off + blk * 9u;
  for (uint w = 0u; w < 8u; ++w) {
    uint packed = 0u;
    for (uint k = 0u; k < 4u; ++k) {
      const int c = clamp(int(roundEven(x[xb + 4u * w + k] * id)), -127, 127);
      packed |= (uint(c) & 0xFFu) << (8u * k);
    }
    q[ob + w] = packed;
  }
  q[ob + 8u] = floatBitsToUint(d);
}
