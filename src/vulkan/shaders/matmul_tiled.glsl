// The body of matmul_tiled.comp and matmul_tiled_f16.comp (TILE_T: the type of the shared
// tiles, float or float16_t). A q4p16 matmul over many input rows (prefill, batched steps):
// out[t * y_stride + r] = sum_c in[t][c] * W[r][c], float32 accumulation.
//
// Why: matmul.comp decodes every weight block once per input row (one workgroup per 16
// weight rows and input row), so a 64-row prefill decodes each block 64 times. Here one
// workgroup of 64 threads computes an output tile of 64 weight rows (4 q4p16 groups) x 32
// input rows: per 32-column block it decodes the tile's 64 weight rows once into shared
// memory (the 4-bit codes as numbers -8..7 and each row's scale), loads the 32 input rows'
// 32 values beside them, and every thread sums 8 weight rows x 4 input rows from the shared
// tiles (12 shared loads per 32 products). A weight block is read and decoded once per tile
// of 32 input rows instead of once per row.
//
// Arithmetic per output (row r, input t): for each block b in order, s = sum over the 32
// columns in order of code * x, then acc += d_b * s. It does not depend on where r and t sit
// in a tile, so a row's value is the same whatever else the step holds (docs/backends.md);
// it differs from matmul.comp's order (16 lanes over the blocks, then a tree) by float32
// rounding only. The codes and scales are exact in both tile types; with float16 tiles
// each input value is rounded to binary16 (nearest even, clamped to +-65504) before the
// product, which is computed and summed in float32: the documented fp16 bound.
layout(local_size_x = 64) in;

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

// One column c of the block for input rows xi + 8 J: both vec4s of weight rows (a0: rows
// wr + 8 i, a1: rows wr + 32 + 8 i, i < 4) times that input value.
#define STEP(J) { const float xv = float(xs[c * kXStride + xi + 8u * J]); s0_##J += a0 * xv; s1_##J += a1 * xv; }
// The block's 32 columns in order; BODY is the STEPs of the live input rows.
#define COLUMNS(BODY)                                                                               \
  for (uint c = 0u; c < 32u; ++c) {                                                                 \
    const uint cw = c * kTileW + wr;                                                                \
    const vec4 a0 = vec4(float(codes[cw]), float(codes[cw + 8u]), float(codes[cw + 16u]), float(codes[cw + 24u])); \
    const vec4 a1 = vec4(float(codes[cw + 32u]), float(codes[cw + 40u]), float(codes[cw + 48u]), float(codes[cw + 56u])); \
    BODY                                                                                            \
  }

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint nb = p.cols / 32u;
  const uint n_groups = (p.rows + 15u) / 16u;
  const uint group0 = gl_WorkGroupID.x * 4u;
  const uint in0 = gl_WorkGroupID.y * kTileX;
  // Loading: thread (r, t) decodes code word t of row r in each of the 4 groups (8 codes
  // each); the 16 rows' words of one step are adjacent in q4p16, so 16 threads read one
  // 64-byte line.
  const uint lr = tid % 16u, lt = tid / 16u;
  // Input loading: thread (input row tid / 2, 16 columns from (tid % 2) * 16).
  const uint xr = tid / 2u, xc = (tid % 2u) * 16u;
  const bool x_live = in0 + xr < p.n_in;
  const uint xbase = p.x_off + (in0 + xr) * p.cols + xc;
  // Summing: thread (weight rows wr + 8 i, input rows xi + 8 j), i < 8, j < 4: the vec4
  // components hold 4 weight rows (no local arrays, which llvmpipe keeps in memory). A tile
  // with fewer input rows left skips the input rows past them (the same for the whole
  // workgroup) with the same expressions for the others.
  const uint wr = tid % 8u, xi = tid / 8u;
  const uint left = p.n_in - in0;
  const uint n_j = left >= 32u ? 4u : (left + 7u) / 8u;
  vec4 acc0_0 = vec4(0.0), acc0_1 = vec4(0.0), acc0_2 = vec4(0.0), acc0_3 = vec4(0.0);
  vec4 acc1_0 = vec4(0.0), acc1_1 = vec4(0.0), acc1_2 = vec4(0.0), acc1_3 = vec4(0.0);

  for (uint b = 0u; b < nb; ++b) {
    barrier();  // the previous block's tiles are no longer read
    [[unroll]] for (uint g = 0u; g < 4u; ++g) {
      uint code = 0x88888888u;  // codes 8: values 0 (a group past the matrix)
      if (group0 + g < n_groups) code = w[(group0 + g) * nb * 72u + (b * 4u + lt) * 16u + lr];
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        const uint byte = (code >> (8u * k)) & 0xFFu;
        codes[(4u * lt + k) * kTileW + g * 16u + lr] = TILE_T(float(int(byte & 0xFu) - 8));
        codes[(16u + 4u * lt + k) * kTileW + g * 16u + lr] = TILE_T(float(int(byte >> 4u) - 8));
      }
    }
    {
      // Scale of row tid: half number b * 16 + r after its group's codes (nb * 64 words).
      const uint g = group0 + tid / 16u, h = b * 16u + tid % 16u;
      float d = 0.0;
      if (g < n_groups) {
        const vec2 pair = unpackHalf2x16(w[g * nb * 72u + nb * 64u + h / 2u]);
        d = (h & 1u) == 0u ? pair.x : pair.y;
      }
      scales[tid] = d;
    }
    [[unroll]] for (uint q = 0u; q < 16u; ++q)
      xs[(xc + q) * kXStride + xr] = TILE_T(x_live ? load_x(xbase + b * 32u + q) : 0.0);
    barrier();
    vec4 s0_0 = vec4(0.0), s0_1 = vec4(0.0), s0_2 = vec4(0.0), s0_3 = vec4(0.0);
    vec4 s1_0 = vec4(0.0), s1_1 = vec4(0.0), s1_2 = vec4(0.0), s1_3 = vec4(0.0);
    if (n_j == 4u) COLUMNS(STEP(0) STEP(1) STEP(2) STEP(3))
    else if (n_j == 3u) COLUMNS(STEP(0) STEP(1) STEP(2))
    else if (n_j == 2u) COLUMNS(STEP(0) STEP(1))
    else COLUMNS(STEP(0))
    const vec4 d0 = vec4(scales[wr], scales[wr + 8u], scales[wr + 16u], scales[wr + 24u]);
    const vec4 d1 = vec4(scales[wr + 32u], scales[wr + 40u], scales[wr + 48u], scales[wr + 56u]);
    acc0_0 += d0 * s0_0; acc0_1 += d0 * s0_1; acc0_2 += d0 * s0_2; acc0_3 += d0 * s0_3;
    acc1_0 += d1 * s1_0; acc1_1 += d1 * s1_1; acc1_2 += d1 * s1_2; acc1_3 += d1 * s1_3;
  }
  const uint t0 = in0 + xi, r0 = group0 * 16u + wr;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const uint ra = r0 + 8u * i, rb = r0 + 32u + 8u * i;
    if (t0 < p.n_in) {
      if (ra < p.rows) y[p.y_off + t0 * p.y_stride + ra] = acc0_0[i];
      if (rb < p.rows) y[p.y_off + t0 * p.y_stride + rb] = acc1_0[i];
    }
    if (t0 + 8u < p.n_in) {
      if (ra < p.rows) y[p.y_off + (t0 + 8u) * p.y_stride + ra] = acc0_1[i];
      if (rb < p.rows) y[p.y_off + (t0 + 8u) * p.y_stride + rb] = acc1_1[i];
    }
    if (t0 + 16u < p.n_in) {
      if (ra < p.rows) y[p.y_off + (t0 + 16u) * p.y_stride + ra] = acc0_2[i];
      if (rb < p.rows) y[p.y_off + (t0 + 16u) * p.y_stride + rb] = acc1_2[i];
    }
    if (t0 + 24u < p.n_in) {
      if (ra < p.rows) y[p.y_off + (t0 + 24u) * p.y_stride + ra] = acc0_3[i];
      if (rb < p.rows) y[p.y_off + (t0 + 24u) * p.y_stride + rb] = acc1_3[i];
    }
  }
}
