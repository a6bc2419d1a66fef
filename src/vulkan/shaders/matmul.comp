// out[t * y_stride + r] = sum_c in[t][c] * W[r][c], float32 accumulation (backend::Device::matmul).
// One workgroup per 16 output rows and input row t; thread (r, lane) of 16 x 16 sums the
// columns lane, lane + 16, ... (q4p16: whole 32-element blocks) of row r, then the 16
// lanes are added in shared memory. q4p16 is kernels/q4_packed.h's layout: for group g,
// block b, step t, the 16 rows' code words are adjacent, so the 16 threads of one lane read
// one 64-byte line; the block's scales follow all the group's codes.
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer Input { float x[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Params {
  uint layout_kind;  // 0 f32, 1 f16, 2 bf16, 3 q4p16
  uint rows;
  uint cols;
  uint x_off;        // words
  uint y_off;
  uint w_off;
  uint y_stride;     // floats between output rows of consecutive tokens
  uint row_bytes;    // unused here (matmul_ggml.comp)
} p;

shared float partial[256];

float q4_block(uint base, uint nb, uint b, uint r, uint xb) {
  // Scale: half number b * 16 + r after the group's codes (nb * 64 words).
  const uint half_index = b * 16u + r;
  const uint sw = w[base + nb * 64u + half_index / 2u];
  const float d = unpackHalf2x16(sw).x * float(1u - (half_index & 1u)) + unpackHalf2x16(sw).y * float(half_index & 1u);
  float s = 0.0;
  for (uint t = 0u; t < 4u; ++t) {
    const uint code = w[base + (b * 4u + t) * 16u + r];
    for (uint k = 0u; k < 4u; ++k) {
      const uint byte = (code >> (8u * k)) & 0xFFu;
      const float lo = float(int(byte & 0xFu) - 8);
      const float hi = float(int(byte >> 4u) - 8);
      s += lo * x[xb + 4u * t + k] + hi * x[xb + 16u + 4u * t + k];
    }
  }
  return d * s;
}

void main() {
  const uint r = gl_LocalInvocationID.x % 16u;
  const uint lane = gl_LocalInvocationID.x / 16u;
  const uint g = gl_WorkGroupID.x;
  const uint tok = gl_WorkGroupID.y;
  const uint row = g * 16u + r;
  const uint xrow = p.x_off + tok * p.cols;
  float acc = 0.0;
  if (p.layout_kind == 3u) {
    const uint nb = p.cols / 32u;
    const uint base = p.w_off + g * nb * 72u;  // 288 bytes per block of 16 rows
    for (uint b = lane; b < nb; b += 16u) acc += q4_block(base, nb, b, r, xrow + b * 32u);
  } else if (row < p.rows) {
    if (p.layout_kind == 0u) {
      const uint wrow = p.w_off + row * p.cols;
      for (uint c = lane; c < p.cols; c += 16u) acc += uintBitsToFloat(w[wrow + c]) * x[xrow + c];
    } else {
      const uint wrow = p.w_off + row * (p.cols / 2u);  // two 16-bit values per word
      for (uint c2 = lane; c2 < p.cols / 2u; c2 += 16u) {
        const uint v = w[wrow + c2];
        vec2 f;
        if (p.layout_kind == 1u) f = unpackHalf2x16(v);
        else f = vec2(uintBitsToFloat(v << 16u), uintBitsToFloat(v & 0xFFFF0000u));
        acc += f.x * x[xrow + 2u * c2] + f.y * x[xrow + 2u * c2 + 1u];
      }
    }
  }
  partial[gl_LocalInvocationID.x] = acc;
  barrier();
  for (uint s = 8u; s > 0u; s >>= 1u) {
    if (lane < s) partial[lane * 16u + r] += partial[(lane + s) * 16u + r];
    barrier();
  }
  if (lane == 0u && row < p.rows) y[p.y_off + tok * p.y_stride + row] = partial[r];
}
