// Internal: the lane-wise tanh, gelu_mul and soft_cap of activation_kernels_avx2.cpp / activation_kernels_avx512.cpp, written
// once over a vector-traits type V and included there once per ISA (inside a namespace and
// under that ISA's `#pragma GCC target`), so each copy is compiled for its own ISA. Do not
// include it anywhere else.
// tanh_inline of ref_ops.cpp, lane-wise (see there for the method and its error).
template <typename V>
inline typename V::F tanh_v(typename V::F u) {
  using F = typename V::F;
  const F a = V::min(V::abs(u), V::set(43.0f));
  const F x = V::mul(V::set(-2.0f), a);
  typename V::I ki;
  const F kf = V::trunc_to_int_float(V::sub(V::mul(x, V::set(1.44269504088896341f)), V::set(0.5f)), ki);
  const F r = V::sub(V::sub(x, V::mul(kf, V::set(0.693145751953125f))), V::mul(kf, V::set(1.428606765330187e-06f)));
  F p = V::add(V::set(1.0f / 120), V::mul(r, V::set(1.0f / 720)));
  p = V::add(V::set(1.0f / 24), V::mul(r, p));
  p = V::add(V::set(1.0f / 6), V::mul(r, p));
  p = V::add(V::set(0.5f), V::mul(r, p));
  p = V::add(V::set(1.0f), V::mul(r, p));
  p = V::add(V::set(1.0f), V::mul(r, p));
  const F e = V::mul(p, V::pow2(ki));
  const F big = V::div(V::sub(V::set(1.0f), e), V::add(V::set(1.0f), e));
  const F small = V::mul(a, V::sub(V::set(1.0f), V::mul(V::mul(a, a), V::set(1.0f / 3))));
  return V::copysign(V::select_lt(a, V::set(1e-3f), small, big), u);
}

template <typename V>
void gelu_mul_v(const float* gate, const float* up, std::size_t n, float* out) {
  using F = typename V::F;
  std::size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) {
    const F x = V::load(gate + i);
    // 0.5 x (1 + tanh(k (x + 0.044715 x^3))), grouped as in gelu_inline.
    const F cube = V::mul(V::mul(V::mul(V::set(0.044715f), x), x), x);
    const F t = tanh_v<V>(V::mul(V::set(0.7978845608028654f), V::add(x, cube)));
    const F g = V::mul(V::mul(V::set(0.5f), x), V::add(V::set(1.0f), t));
    V::store(out + i, V::mul(g, V::load(up + i)));
  }
  if (i < n) gelu_mul_scalar(gate + i, up + i, n - i, out + i);
}

template <typename V>
void soft_cap_v(float* x, std::size_t n, float cap) {
  const float inv = 1.0f / cap;
  std::size_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes)
    V::store(x + i, V::mul(V::set(cap), tanh_v<V>(V::mul(V::load(x + i), V::set(inv)))));
  if (i < n) soft_cap_scalar(x + i, n - i, cap);
}

