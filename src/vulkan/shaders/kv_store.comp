// Stores n rows of K and V into their cache slots as binary16 and records each slot's
// position (backend::Device::kv_store). One workgroup per row; a thread per word (2 halves).
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer K { float k[]; };
layout(std430, binding = 1) readonly buffer V { float v[]; };
layout(std430, binding = 2) writeonly buffer KC { uint kc[]; };
layout(std430, binding = 3) writeonly buffer VC { uint vc[]; };
layout(std430, binding = 4) writeonly buffer Pos { int pos[]; };
layout(std430, binding = 5) readonly buffer Inputs { int inputs[]; };  // slots and positions

layout(push_constant) uniform Params {
  uint row_floats;  // n_kv_heads * head_dim (even)
  uint k_off;
  uint v_off;
  uint slots_off;
  uint positions_off;
  uint n;
} p;

#include "f16_round.glsl"

void main() {
  const uint i = gl_WorkGroupID.x;
  if (i >= p.n) return;
  const uint slot = uint(inputs[p.slots_off + i]);
  const uint words = p.row_floats / 2u;
  const uint src_k = p.k_off + i * p.row_floats, src_v = p.v_off + i * p.row_floats;
  for (uint w = gl_LocalInvocationID.x; w < words; w += 256u) {
    kc[slot * words + w] = f32_to_f16_bits(k[src_k + 2u * w]) | (f32_to_f16_bits(k[src_k + 2u * w + 1u]) << 16u);
    vc[slot * words + w] = f32_to_f16_bits(v[src_v + 2u * w]) | (f32_to_f16_bits(v[src_v + 2u * w + 1u]) << 16u);
  }
  if (gl_LocalInvocationID.x == 0u) pos[slot] = inputs[p.positions_off + i];
}
