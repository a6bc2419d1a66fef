// Attention of one (query token, head) per workgroup over slots [0, n_scan) of an f16 KV
// cache (backend::Device::attend), in tiles of 256 slots with an online softmax: thread s
// scores slot s of the tile, then thread j accumulates the weighted values of head
// dimensions 2j and 2j + 1 (head_dim <= 512). Running max and sum in float32.
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer KC { uint kc[]; };
layout(std430, binding = 2) readonly buffer VC { uint vc[]; };
layout(std430, binding = 3) readonly buffer Pos { int pos[]; };
layout(std430, binding = 4) readonly buffer Inputs { int inputs[]; };  // query positions
layout(std430, binding = 5) writeonly buffer Out { float o[]; };

layout(push_constant) uniform Params {
  uint n_heads;
  uint n_kv_heads;
  uint head_dim;
  uint n_scan;
  int window;
  float scale;
  uint q_off;
  uint qpos_off;
  uint out_off;
  int scan_word;  // >= 0: scan min(n_scan, inputs[scan_word]) slots
} p;

shared float qs[512];
shared float prob[256];
shared float red[256];

void main() {
  const uint head = gl_WorkGroupID.x, tok = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
  const uint d = p.head_dim, words = d / 2u;
  const uint g = head / (p.n_heads / p.n_kv_heads);
  const int qpos = inputs[p.qpos_off + tok];
  const uint qb = p.q_off + (tok * p.n_heads + head) * d;
  for (uint j = lid; j < d; j += 256u) qs[j] = q[qb + j];
  barrier();

  const uint n_scan = p.scan_word >= 0 ? min(p.n_scan, uint(max(inputs[p.scan_word], 0))) : p.n_scan;
  float m = -1.0 / 0.0, l = 0.0;  // running max and sum (uniform over the workgroup)
  vec2 acc = vec2(0.0);
  for (uint t0 = 0u; t0 < n_scan; t0 += 256u) {
    const uint s = t0 + lid;
    float score = -1.0 / 0.0;
    if (s < n_scan) {
      const int sp = pos[s];
      if (sp >= 0 && sp <= qpos && (p.window <= 0 || qpos - sp < p.window)) {
        const uint kb = (s * p.n_kv_heads + g) * words;
        float dot = 0.0;
        for (uint w = 0u; w < words; ++w) {
          const vec2 kv = unpackHalf2x16(kc[kb + w]);
          dot += qs[2u * w] * kv.x + qs[2u * w + 1u] * kv.y;
        }
        score = p.scale * dot;
      }
    }
    red[lid] = score;
    barrier();
    for (uint r = 128u; r > 0u; r >>= 1u) {
      if (lid < r) red[lid] = max(red[lid], red[lid + r]);
      barrier();
    }
    const float tile_max = red[0];
    barrier();
    if (tile_max == -1.0 / 0.0) continue;  // nothing visible in this tile (uniform)
    const float m_new = max(m, tile_max);
    const float alpha = m == -1.0 / 0.0 ? 0.0 : exp(m - m_new);
    const float e = score == -1.0 / 0.0 ? 0.0 : exp(score - m_new);
    prob[lid] = e;
    red[lid] = e;
    barrier();
    for (uint r = 128u; r > 0u; r >>= 1u) {
      if (lid < r) red[lid] += red[lid + r];
      barrier();
    }
    l = l * alpha + red[0];
    m = m_new;
    acc *= alpha;
    if (lid < words) {
      const uint tile = min(256u, n_scan - t0);
      for (uint i = 0u; i < tile; ++i) {
        const float pi = prob[i];
        if (pi != 0.0) acc += pi * unpackHalf2x16(vc[((t0 + i) * p.n_kv_heads + g) * words + lid]);
      }
    }
    barrier();
  }
  if (lid < words) {
    const vec2 r = l > 0.0 ? acc / l : vec2(0.0);
    const uint ob = p.out_off + (tok * p.n_heads + head) * d;
    o[ob + 2u * lid] = r.x;
    o[ob + 2u * lid + 1u] = r.y;
  }
}
