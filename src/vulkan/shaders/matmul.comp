// out[t * y_stride + r] = sum_c in[t][c] * W[r][c], float32 accumulation (backend::Device::matmul).
// One workgroup per 16 output rows and input row t; thread (r, lane) of 16 x 16 sums the
// columns lane, lane + 16, ... (q4p16: whole 32-element blocks) of row r, then the 16
// lanes are added in shared memory. q4p16 is kernels/q4_packed.h's layout: for group g,
// block b, step t, the 16 rows' code words are adjacent, so the 16 threads of one lane read
// one 64-byte line; the block's scales follow all the group's codes.
// With a row list (backend::Device::matmul_rows, the subset LM head of guided decoding) the
// workgroup's 16 rows are list entries instead: thread (i, lane) computes listed row i with
// exactly the arithmetic the full matmul gives that row (same blocks per lane, same sum
// order), so each listed logit is bit-identical to the full head's.
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer Input { float x[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };
layout(std430, binding = 3) readonly buffer Rows { uint ids[]; };  // the row list (any buffer when none)

layout(push_constant) uniform Params {
  uint layout_kind;  // 0 f32, 1 f16, 2 bf16, 3 q4p16
  uint rows;
  uint cols;
  uint x_off;        // words
  uint y_off;
  uint w_off;
  uint y_stride;     // floats between output rows of consecutive tokens
  uint row_bytes;    // unused here (matmul_ggml.comp)
  uint ids_off;      // 0xFFFFFFFF: every row; else words into Rows: the count, then the row ids
  uint row_base;     // a row list names rows of the whole matrix; this part starts at row_base
  uint ids_max;      // entries the list may hold (the count is clamped to it)
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
  const uint tok = gl_WorkGroupID.y;
  const uint xrow = p.x_off + tok * p.cols;
  // The weight row this thread sums and where its result goes (out = -1: nowhere).
  uint row = gl_WorkGroupID.x * 16u + r;
  uint out_index = row < p.rows ? tok * p.y_stride + row : 0xFFFFFFFFu;
  bool live = true;  // a full q4p16 group is summed whole (its padding rows are zeros)
  if (p.ids_off != 0xFFFFFFFFu) {
    const uint entry = row;
    row = 0xFFFFFFFFu;
    if (entry < min(ids[p.ids_off], p.ids_max)) row = ids[p.ids_off + 1u + entry] - p.row_base;  // wraps when below this part
    live = row < p.rows;
    out_index = live ? entry : 0xFFFFFFFFu;
  }
  float acc = 0.0;
  if (p.layout_kind == 3u) {
    const uint nb = p.cols / 32u;
    const uint base = p.w_off + (row / 16u) * nb * 72u;  // 288 bytes per block of 16 rows
    if (live)
      for (uint b = lane; b < nb; b += 16u) acc += q4_block(base, nb, b, row % 16u, xrow + b * 32u);
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
  if (lane == 0u && out_index != 0xFFFFFFFFu) y[p.y_off + out_index] = partial[r];
}
