// The element-wise ops of backend::Device over n elements (grid-stride, so any n fits the
// workgroup count limit): 0 add (y += x), 1 scale (y *= s), 2 soft cap (y = s * tanh(y / s)),
// 3 copy (y = x, as words), 4 gelu_mul (y[t][i] = gelu_tanh(z[t][i]) * x[t * stride + i]).
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer Z { float z[]; };

layout(push_constant) uniform Params {
  uint op;
  uint n;
  float s;
  uint y_off;
  uint x_off;
  uint z_off;
  uint width;   // gelu_mul: row width and the up operand's row stride
  uint stride;
} p;

// tanh without overflow: e^(2u) is finite for |u| <= 15, where tanh is already 1 in float.
float tanh_safe(float u) {
  const float c = clamp(u, -15.0, 15.0);
  const float e = exp(2.0 * c);
  return (e - 1.0) / (e + 1.0);
}

float gelu_tanh(float v) {
  const float k = 0.7978845608028654;  // sqrt(2 / pi)
  return 0.5 * v * (1.0 + tanh_safe(k * (v + 0.044715 * v * v * v)));
}

void main() {
  const uint step = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += step) {
    if (p.op == 0u) {
      y[p.y_off + i] += x[p.x_off + i];
    } else if (p.op == 1u) {
      y[p.y_off + i] *= p.s;
    } else if (p.op == 2u) {
      y[p.y_off + i] = p.s * tanh_safe(y[p.y_off + i] / p.s);
    } else if (p.op == 3u) {
      y[p.y_off + i] = x[p.x_off + i];
    } else {
      const uint t = i / p.width, j = i % p.width;
      y[p.y_off + i] = gelu_tanh(z[p.z_off + i]) * x[p.x_off + t * p.stride + j];
    }
  }
}
