// NeoX (rotate-half) rotation of count head vectors of d floats in place, one workgroup per
// vector; vector i uses the angles row i / per_row of cos_sin ([d/2] cos, [d/2] sin).
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Angles { float cs[]; };

layout(push_constant) uniform Params {
  uint d;
  uint per_row;
  uint x_off;
  uint cs_off;
  uint count;
} p;

void main() {
  const uint v = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
  if (v >= p.count) return;
  const uint h = p.d / 2u;
  const uint xb = p.x_off + v * p.d;
  const uint cb = p.cs_off + (v / p.per_row) * p.d;
  for (uint i = gl_LocalInvocationID.x; i < h; i += 256u) {
    const float a = x[xb + i], b = x[xb + i + h];
    const float c = cs[cb + i], s = cs[cb + h + i];
    x[xb + i] = a * c - b * s;
    x[xb + i + h] = b * c + a * s;
  }
}
