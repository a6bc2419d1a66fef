// out[t][r] = sum_c in[t][c] * W[r][c] over ggml block rows exactly as a GGUF file stores
// them (backend::WeightLayout::q8_0 ... iq4_xs; kernels/dequant_blocks.h has the layouts),
// float32 accumulation. Rows are cols / block values of blocks laid end to end, so a block
// may start at any byte: every field is read through byte offsets into the word array.
// Work unit: 32 consecutive values of a row (one block of the 32-value formats, one
// sub-block of the 256-value K formats). One workgroup per 8 output rows and input row t;
// thread (row r, lane) of 8 x 32 sums the units lane, lane + 32, ... of row r (neighbouring
// lanes read neighbouring bytes of one row), then the 32 lanes are added in shared memory.
// With a row list (backend::Device::matmul_rows) the 8 rows are list entries, each summed
// with the full matmul's arithmetic for that row (matmul.comp says why).
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, binding = 1) readonly buffer Input { float x[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };
layout(std430, binding = 3) readonly buffer Rows { uint ids[]; };  // the row list (any buffer when none)

// The block type, kQ8_0 ... kIQ4_XS below: a specialization constant, so each type's
// pipeline is compiled with only its own decoder (one pipeline per type, vk_ops.cpp).
layout(constant_id = 0) const uint kKind = 0u;

layout(push_constant) uniform Params {
  uint kind;      // = kKind (unused here)
  uint rows;
  uint cols;
  uint x_off;     // words
  uint y_off;
  uint w_off;     // words: where row 0 starts
  uint y_stride;  // floats between output rows of consecutive tokens
  uint row_bytes; // bytes of one weight row
  uint ids_off;   // 0xFFFFFFFF: every row; else words into Rows: the count, then the row ids
  uint row_base;  // a row list names rows of the whole matrix; this part starts at row_base
  uint ids_max;      // entries the list may hold (the count is clamped to it)
} p;

const uint kQ8_0 = 0u, kQ4_1 = 1u, kQ5_0 = 2u, kQ5_1 = 3u, kQ4_K = 4u, kQ5_K = 5u, kQ6_K = 6u, kIQ4_NL = 7u,
           kIQ4_XS = 8u;
const float kIq4nl[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0,
                                   53.0, 69.0, 89.0, 113.0);

shared float partial[256];

uint byte_at(uint b) { return (w[b >> 2u] >> ((b & 3u) << 3u)) & 0xFFu; }
uint u16_at(uint b) { return byte_at(b) | (byte_at(b + 1u) << 8u); }
// Four bytes from any offset (the word after is read only when the bytes straddle it).
uint u32_at(uint b) {
  const uint s = (b & 3u) << 3u;
  const uint lo = w[b >> 2u];
  return s == 0u ? lo : (lo >> s) | (w[(b >> 2u) + 1u] << (32u - s));
}
float half_at(uint b) { return unpackHalf2x16(u16_at(b)).x; }

// The 6-bit scale and min of sub-block j of a Q4_K / Q5_K super-block (scales at byte sb).
uvec2 k_scale_min(uint sb, uint j) {
  if (j < 4u) return uvec2(byte_at(sb + j) & 63u, byte_at(sb + j + 4u) & 63u);
  const uint a = byte_at(sb + j + 4u);
  return uvec2((a & 0xFu) | ((byte_at(sb + j - 4u) >> 6u) << 4u), (a >> 4u) | ((byte_at(sb + j) >> 6u) << 4u));
}

// sum over the unit's 32 values of code * x, for 16 bytes of 4-bit codes at qs (byte j: value
// j low nibble, value j + 16 high nibble), with an optional fifth bit per value in qh (bit i:
// value i) and `bias` subtracted from every code; sx gets the sum of x.
float nibble_dot(uint qs, uint qh, bool fifth, float bias, uint xb, inout float sx) {
  float s = 0.0;
  for (uint i = 0u; i < 4u; ++i) {
    const uint q4 = u32_at(qs + 4u * i);
    for (uint k = 0u; k < 4u; ++k) {
      const uint j = 4u * i + k;
      uint lo = (q4 >> (8u * k)) & 0xFu, hi = (q4 >> (8u * k + 4u)) & 0xFu;
      if (fifth) {
        lo |= ((qh >> j) & 1u) << 4u;
        hi |= ((qh >> (j + 16u)) & 1u) << 4u;
      }
      const float a = x[xb + j], b = x[xb + j + 16u];
      s += (float(lo) - bias) * a + (float(hi) - bias) * b;
      sx += a + b;
    }
  }
  return s;
}

// As nibble_dot with the IQ4_NL levels in place of the codes.
float iq4_dot(uint qs, uint xb) {
  float s = 0.0;
  for (uint i = 0u; i < 4u; ++i) {
    const uint q4 = u32_at(qs + 4u * i);
    for (uint k = 0u; k < 4u; ++k) {
      const uint j = 4u * i + k;
      s += kIq4nl[(q4 >> (8u * k)) & 0xFu] * x[xb + j] + kIq4nl[(q4 >> (8u * k + 4u)) & 0xFu] * x[xb + j + 16u];
    }
  }
  return s;
}

// Unit u (values 32u .. 32u + 31) of the row starting at byte rb, dotted with x[xb ...].
float unit_dot(uint rb, uint u, uint xb) {
  float sx = 0.0;
  if (kKind == kQ8_0) {
    const uint b = rb + u * 34u;
    float s = 0.0;
    for (uint i = 0u; i < 8u; ++i) {
      const uint q4 = u32_at(b + 2u + 4u * i);
      for (uint k = 0u; k < 4u; ++k) s += float(int(q4 << (24u - 8u * k)) >> 24) * x[xb + 4u * i + k];
    }
    return half_at(b) * s;
  }
  if (kKind == kQ4_1) {
    const uint b = rb + u * 20u;
    const float s = nibble_dot(b + 4u, 0u, false, 0.0, xb, sx);
    return half_at(b) * s + half_at(b + 2u) * sx;
  }
  if (kKind == kQ5_0) {
    const uint b = rb + u * 22u;
    return half_at(b) * nibble_dot(b + 6u, u32_at(b + 2u), true, 16.0, xb, sx);
  }
  if (kKind == kQ5_1) {
    const uint b = rb + u * 24u;
    const float s = nibble_dot(b + 8u, u32_at(b + 4u), true, 0.0, xb, sx);
    return half_at(b) * s + half_at(b + 2u) * sx;
  }
  if (kKind == kIQ4_NL) {
    const uint b = rb + u * 18u;
    return half_at(b) * iq4_dot(b + 2u, xb);
  }
  const uint sb = u / 8u, j = u % 8u;  // super-block and its sub-block of 32
  if (kKind == kQ4_K || kKind == kQ5_K) {
    const bool q5 = kKind == kQ5_K;
    const uint b = rb + sb * (q5 ? 176u : 144u);
    const uvec2 sm = k_scale_min(b + 4u, j);
    const uint qs = b + (q5 ? 48u : 16u) + 32u * (j / 2u), shift = 4u * (j & 1u);
    float s = 0.0;
    for (uint i = 0u; i < 8u; ++i) {
      const uint q4 = u32_at(qs + 4u * i);
      const uint h4 = q5 ? u32_at(b + 16u + 4u * i) : 0u;
      for (uint k = 0u; k < 4u; ++k) {
        const uint q = ((q4 >> (8u * k + shift)) & 0xFu) | (((h4 >> (8u * k + j)) & 1u) << 4u);
        const float a = x[xb + 4u * i + k];
        s += float(q) * a;
        sx += a;
      }
    }
    return half_at(b) * float(sm.x) * s - half_at(b + 2u) * float(sm.y) * sx;
  }
  if (kKind == kQ6_K) {
    // Half n = j / 4 of the super-block, quarter q = j % 4: value l of the unit has its low
    // nibble in ql[64n + 32(q & 1) + l] (high nibble when q >= 2), its top two bits at bit
    // 2q of qh[32n + l], and the scale int8 scales[8n + 2q + l / 16].
    const uint b = rb + sb * 210u, n = j / 4u, q = j % 4u;
    const uint ql = b + 64u * n + 32u * (q & 1u), qh = b + 128u + 32u * n, sc = b + 192u + 8u * n + 2u * q;
    const uint lshift = 4u * (q >> 1u), hshift = 2u * q;
    float s[2] = float[2](0.0, 0.0);
    for (uint i = 0u; i < 8u; ++i) {
      const uint l4 = u32_at(ql + 4u * i), h4 = u32_at(qh + 4u * i);
      for (uint k = 0u; k < 4u; ++k) {
        const int v = int(((l4 >> (8u * k + lshift)) & 0xFu) | (((h4 >> (8u * k + hshift)) & 3u) << 4u)) - 32;
        s[i / 4u] += float(v) * x[xb + 4u * i + k];
      }
    }
    const float s0 = float(int(byte_at(sc) << 24u) >> 24), s1 = float(int(byte_at(sc + 1u) << 24u) >> 24);
    return half_at(b + 208u) * (s0 * s[0] + s1 * s[1]);
  }
  // kIQ4_XS: d, scales_h (16 bits), scales_l[4], qs[128] per 256 values.
  const uint b = rb + sb * 136u;
  const int ls = int(((byte_at(b + 4u + j / 2u) >> (4u * (j & 1u))) & 0xFu) | (((u16_at(b + 2u) >> (2u * j)) & 3u) << 4u));
  return half_at(b) * float(ls - 32) * iq4_dot(b + 8u + 16u * j, xb);
}

void main() {
  const uint lane = gl_LocalInvocationID.x % 32u;
  const uint r = gl_LocalInvocationID.x / 32u;
  const uint tok = gl_WorkGroupID.y;
  const uint xrow = p.x_off + tok * p.cols;
  uint row = gl_WorkGroupID.x * 8u + r;
  uint out_index = tok * p.y_stride + row;
  if (p.ids_off != 0xFFFFFFFFu) {
    const uint entry = row;
    row = 0xFFFFFFFFu;
    if (entry < min(ids[p.ids_off], p.ids_max)) row = ids[p.ids_off + 1u + entry] - p.row_base;  // wraps when below this part
    out_index = entry;
  }
  float acc = 0.0;
  if (row < p.rows) {
    const uint rb = p.w_off * 4u + row * p.row_bytes;
    for (uint u = lane; u < p.cols / 32u; u += 32u) acc += unit_dot(rb, u, xrow + u * 32u);
  }
  partial[gl_LocalInvocationID.x] = acc;
  barrier();
  for (uint s = 16u; s > 0u; s >>= 1u) {
    if (lane < s) partial[gl_LocalInvocationID.x] += partial[gl_LocalInvocationID.x + s];
    barrier();
  }
  if (lane == 0u && row < p.rows) y[p.y_off + out_index] = partial[gl_LocalInvocationID.x];
}
