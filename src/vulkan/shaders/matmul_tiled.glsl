// The body of matmul_tiled.comp and matmul_tiled_f16.comp (TILE_T: the type of the shared
// tiles, float or float16_t). A q4p16 matmul over many input rows (prefill, batched steps):
// out[t * y_stride + r] = sum_c in[t][c] * W[r][c], float32 accumulation.
//
// Why: matmul.comp decodes every weight block once per input row (one workgroup per 16
// weight rows and input row), so a 64-row prefill decodes each block 64 times. Here one
// workgroup computes an output tile of 64 weight rows (4 q4p16 groups) x 32 input rows: per
// 32-column block it decodes the tile's 64 weight rows once into shared memory (the 4-bit
// codes as numbers -8..7 and each row's scale), loads the 32 input rows' 32 values beside
// them, and every thread sums 4 x 2 outputs from the shared tiles. A weight block is read
// and decoded once per tile of 32 input rows instead of once per row.
//
// Arithmetic per output (row r, input t): for each block b in order, s = sum over the 32
// columns in order of code * x, then acc += d_b * s. It does not depend on where r and t sit
// in a tile, so a row's value is the same whatever else the step holds (docs/backends.md);
// it differs from matmul.comp's order (16 lanes over the blocks, then a tree) by float32
// rounding only. The codes and scales are exact in both tile types; with float16 tiles
// each input value is rounded to binary16 (nearest even, clamped to +-65504) before the
// product, which is computed and summed in float32: the documented fp16 bound.
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer Input { float x[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Params {
  uint rows;      // weight rows (the q4p16 groups past them are zeros)
  uint cols;      // a multiple of 32
  uint x_off;     // words
  uint y_off;
  uint y_stride;  // floats between output rows of consecutive input rows
  uint n_in;      // input rows
} p;

const uint kTileW = 64u;     // weight rows per tile: 4 groups of 16
const uint kTileX = 32u;     // input rows per tile
const uint kXStride = 33u;   // the input tile's row pitch: padded against bank conflicts

shared TILE_T codes[32u * kTileW];       // [column in block][weight row]
shared TILE_T xs[32u * kXStride];        // [column in block][input row]
shared float scales[kTileW];             // the block's scale per weight row

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint nb = p.cols / 32u;
  const uint n_groups = (p.rows + 15u) / 16u;
  const uint group0 = gl_WorkGroupID.x * 4u;
  const uint in0 = gl_WorkGroupID.y * kTileX;
  // Loading: thread (r, t, g) decodes code word t of row r in group g (8 codes); the 16
  // rows' words of one step are adjacent in q4p16, so 16 threads read one 64-byte line.
  const uint lr = tid % 16u, lt = (tid / 16u) % 4u, lg = tid / 64u;
  const bool group_live = group0 + lg < n_groups;
  const uint gbase = (group0 + lg) * nb * 72u;  // 288 bytes per group and block
  // Input loading: thread (x row tid / 8, 4 columns from (tid % 8) * 4).
  const uint xr = tid / 8u, xc = (tid % 8u) * 4u;
  const bool x_live = in0 + xr < p.n_in;
  const uint xbase = p.x_off + (in0 + xr) * p.cols + xc;
  // Summing: thread (weight rows wr + 16 i, input rows xi + 16 j), i < 4 (the components of
  // a vec4: no local arrays, which llvmpipe keeps in memory), j < 2; a tile with at most 16
  // input rows left skips j = 1 (the same for the whole workgroup).
  const uint wr = tid % 16u, xi = tid / 16u;
  const bool two = p.n_in - in0 > 16u;
  vec4 acc0 = vec4(0.0), acc1 = vec4(0.0);

  for (uint b = 0u; b < nb; ++b) {
    barrier();  // the previous block's tiles are no longer read
    uint code = 0x88888888u;  // codes 8: values 0 (a group past the matrix)
    if (group_live) code = w[gbase + (b * 4u + lt) * 16u + lr];
    [[unroll]] for (uint k = 0u; k < 4u; ++k) {
      const uint byte = (code >> (8u * k)) & 0xFFu;
      codes[(4u * lt + k) * kTileW + lg * 16u + lr] = TILE_T(float(int(byte & 0xFu) - 8));
      codes[(16u + 4u * lt + k) * kTileW + lg * 16u + lr] = TILE_T(float(int(byte >> 4u) - 8));
    }
    if (tid < kTileW) {
      // Scale: half number b * 16 + r after the group's codes (nb * 64 words).
      const uint g = group0 + tid / 16u, h = b * 16u + tid % 16u;
      float d = 0.0;
      if (g < n_groups) {
        const vec2 pair = unpackHalf2x16(w[g * nb * 72u + nb * 64u + h / 2u]);
        d = (h & 1u) == 0u ? pair.x : pair.y;
      }
      scales[tid] = d;
    }
    [[unroll]] for (uint q = 0u; q < 4u; ++q)
      xs[(xc + q) * kXStride + xr] = TILE_T(x_live ? load_x(xbase + b * 32u + q) : 0.0);
    barrier();
    // Per output: s = sum over the block's columns in order of code * x, then acc += d * s;
    // the same expressions in both branches, so a row's bits do not depend on the branch.
    vec4 s0 = vec4(0.0), s1 = vec4(0.0);
    if (two) {
      for (uint c = 0u; c < 32u; ++c) {
        const uint cw = c * kTileW + wr;
        const vec4 a = vec4(float(codes[cw]), float(codes[cw + 16u]), float(codes[cw + 32u]), float(codes[cw + 48u]));
        s0 += a * float(xs[c * kXStride + xi]);
        s1 += a * float(xs[c * kXStride + xi + 16u]);
      }
    } else {
      for (uint c = 0u; c < 32u; ++c) {
        const uint cw = c * kTileW + wr;
        const vec4 a = vec4(float(codes[cw]), float(codes[cw + 16u]), float(codes[cw + 32u]), float(codes[cw + 48u]));
        s0 += a * float(xs[c * kXStride + xi]);
      }
    }
    const vec4 d = vec4(scales[wr], scales[wr + 16u], scales[wr + 32u], scales[wr + 48u]);
    acc0 += d * s0;
    acc1 += d * s1;
  }
  const uint t0 = in0 + xi, r0 = group0 * 16u + wr;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const uint r = r0 + 16u * i;
    if (r >= p.rows) continue;
    if (t0 < p.n_in) y[p.y_off + t0 * p.y_stride + r] = acc0[i];
    if (t0 + 16u < p.n_in) y[p.y_off + (t0 + 16u) * p.y_stride + r] = acc1[i];
  }
}
