// count vectors of n floats: y = x / sqrt(mean(x^2) + eps) * (weight or 1), one workgroup
// per vector (backend::Device::rms_norm). The sum of squares is float32 per thread and then
// a tree over the workgroup (the CPU kernel sums in float64; the difference is a few ulp).
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float wt[]; };
layout(std430, binding = 2) buffer Y { float y[]; };

layout(push_constant) uniform Params {
  uint n;
  uint has_weight;
  float eps;
  uint x_off;
  uint w_off;
  uint y_off;
  uint count;
} p;

shared float partial[256];

void main() {
  const uint v = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
  if (v >= p.count) return;  // whole workgroup: uniform
  const uint lid = gl_LocalInvocationID.x;
  const uint xb = p.x_off + v * p.n;
  const uint yb = p.y_off + v * p.n;
  float ss = 0.0;
  for (uint i = lid; i < p.n; i += 256u) ss += x[xb + i] * x[xb + i];
  partial[lid] = ss;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1u) {
    if (lid < s) partial[lid] += partial[lid + s];
    barrier();
  }
  const float inv = 1.0 / sqrt(partial[0] / float(p.n) + p.eps);
  for (uint i = lid; i < p.n; i += 256u) {
    const float wi = p.has_weight != 0u ? wt[p.w_off + i] : 1.0;
    y[yb + i] = x[xb + i] * inv * wi;
  }
}
