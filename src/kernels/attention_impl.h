// Internal: the attention kernel body, written once over a small vector-traits type V and
// included by each attention_<isa>.cpp after its `#pragma GCC target`. V provides
//   R (register type), W (floats per register), zero, set1, load, store, add, sub, mul,
//   fma(a, b, c) = a * b + c, min, max, hsum, hmax, round (to nearest, ties to even),
//   pow2i(k) = 2^k for integral k in [-127, 127] (0 for -127), zero_below(x, t, y) = x >= t ? y : 0.
// Everything here has internal linkage (anonymous namespace), so the differently targeted
// copies in each ISA file never meet at link time. Design: docs/attention.md.
#pragma once

namespace ringlm::kernels {
namespace {

// kAttnTile (attention_table.h): a tile is scored against one query row at a time into a
// stack array; 32 slots keep a d=256 K tile (32 KiB) in L1 and a d=512 one (64 KiB) in L2
// while the group's heads and the chunk's tokens reuse it.
template <class V>
struct AttnImpl {
  using R = typename V::R;
  static constexpr int W = V::W;
  static_assert(kAttnTile % W == 0, "the tile must be whole registers");

  // e^x: x = k ln2 + r (Cody-Waite, ln2 split in a 16-bit head, exact times |k| <= 127, and a
  // tail), |r| <= ln2/2, e^r by its degree-7 Taylor polynomial (truncation < 6e-9 relative),
  // 2^k built in the exponent bits. Error budget in docs/attention.md (<= 3 ulp measured).
  static R exp(R x) {
    const R xc = V::min(V::max(x, V::set1(-88.0f)), V::set1(88.0f));
    const R kf = V::round(V::mul(xc, V::set1(1.44269504088896341f)));
    const R r = V::sub(V::sub(xc, V::mul(kf, V::set1(0.693145751953125f))), V::mul(kf, V::set1(1.428606765330187e-06f)));
    R p = V::set1(1.0f / 5040);
    p = V::fma(p, r, V::set1(1.0f / 720));
    p = V::fma(p, r, V::set1(1.0f / 120));
    p = V::fma(p, r, V::set1(1.0f / 24));
    p = V::fma(p, r, V::set1(1.0f / 6));
    p = V::fma(p, r, V::set1(0.5f));
    p = V::fma(p, r, V::set1(1.0f));
    p = V::fma(p, r, V::set1(1.0f));
    // Below ln(2^-126) the result would be subnormal or 0; -inf (masked scores) lands here.
    return V::zero_below(x, V::set1(-87.33654f), V::mul(p, V::pow2i(kf)));
  }

  // The same operations on one float (a padded register), so a tail element or a scalar
  // correction factor gets exactly the value a vector lane would.
  static float exp1(float x) {
    alignas(64) float buf[W];
    for (int i = 0; i < W; ++i) buf[i] = x;
    V::store(buf, exp(V::load(buf)));
    return buf[0];
  }

  static void exp_n(const float* x, float* y, std::size_t n) {
    std::size_t i = 0;
    for (; i + W <= n; i += W) V::store(y + i, exp(V::load(x + i)));
    if (i == n) return;
    alignas(64) float buf[W] = {};
    for (std::size_t j = i; j < n; ++j) buf[j - i] = x[j];
    V::store(buf, exp(V::load(buf)));
    for (std::size_t j = i; j < n; ++j) y[j] = buf[j - i];
  }

  // out[c] = q . k_c for four key rows (four independent FMA chains; q loaded once).
  static void dot4(const float* q, const float* k0, const float* k1, const float* k2, const float* k3, int d,
                   float* out) {
    R a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
    int i = 0;
    for (; i + W <= d; i += W) {
      const R qv = V::load(q + i);
      a0 = V::fma(qv, V::load(k0 + i), a0);
      a1 = V::fma(qv, V::load(k1 + i), a1);
      a2 = V::fma(qv, V::load(k2 + i), a2);
      a3 = V::fma(qv, V::load(k3 + i), a3);
    }
    float s0 = V::hsum(a0), s1 = V::hsum(a1), s2 = V::hsum(a2), s3 = V::hsum(a3);
    for (; i < d; ++i) {
      s0 += q[i] * k0[i];
      s1 += q[i] * k1[i];
      s2 += q[i] * k2[i];
      s3 += q[i] * k3[i];
    }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out[3] = s3;
  }

  static float dot1(const float* q, const float* k, int d) {
    R a = V::zero();
    int i = 0;
    for (; i + W <= d; i += W) a = V::fma(V::load(q + i), V::load(k + i), a);
    float s = V::hsum(a);
    for (; i < d; ++i) s += q[i] * k[i];
    return s;
  }

  // acc[c] = acc[c] * corr + sum_s p[s] v_s[c] for columns [c0, c0 + NR * W): NR accumulator
  // registers held across the tile's slots, so acc is read and written once per tile.
  template <int NR>
  static void pv_cols(float* acc, R corr, const float* p, const float* v, std::int64_t stride, int ts, int c0) {
    R a[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) a[r] = V::mul(V::load(acc + c0 + r * W), corr);
    for (int s = 0; s < ts; ++s) {
      if (p[s] == 0.0f) continue;  // invisible slot (or a weight below 2^-126)
      const R ps = V::set1(p[s]);
      const float* vs = v + s * stride + c0;
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) a[r] = V::fma(ps, V::load(vs + r * W), a[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) V::store(acc + c0 + r * W, a[r]);
  }

  static void pv(float* acc, float corr, const float* p, const float* v, std::int64_t stride, int ts, int d) {
    const R c = V::set1(corr);
    int i = 0;
    for (; i + 8 * W <= d; i += 8 * W) pv_cols<8>(acc, c, p, v, stride, ts, i);
    for (; i + W <= d; i += W) pv_cols<1>(acc, c, p, v, stride, ts, i);
    for (; i < d; ++i) {
      float s = acc[i] * corr;
      for (int j = 0; j < ts; ++j) s += p[j] * v[j * stride + i];
      acc[i] = s;
    }
  }

  static void block(const AttnBlock& b) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    const int d = b.kv.head_dim;
    const std::int64_t stride = static_cast<std::int64_t>(b.kv.n_kv_heads) * d;
    const float* kbase = b.kv.k + static_cast<std::int64_t>(b.kv_head) * d;
    const float* vbase = b.kv.v + static_cast<std::int64_t>(b.kv_head) * d;
    alignas(64) float sc[kAttnTile];
    bool vis[kAttnTile];
    for (int s0 = b.s_begin; s0 < b.s_end; s0 += kAttnTile) {
      const int ts = std::min(kAttnTile, b.s_end - s0);
      const std::int32_t* pos = b.kv.pos + s0;
      // The tile's range of held positions: a token whose visible range misses it skips the
      // tile without touching K or V (empty ring slots, out-of-window or future tiles).
      std::int32_t pmin = std::numeric_limits<std::int32_t>::max(), pmax = -1;
      for (int i = 0; i < ts; ++i)
        if (pos[i] >= 0) {
          pmin = std::min(pmin, pos[i]);
          pmax = std::max(pmax, pos[i]);
        }
      if (pmax < 0) continue;
      const float* kt = kbase + s0 * stride;
      const float* vt = vbase + s0 * stride;
      for (int t = b.t_begin; t < b.t_end; ++t) {
        const std::int64_t qp = b.q_pos[t];
        const std::int64_t lo = b.window > 0 ? qp - b.window + 1 : 0;
        if (pmax < lo || pmin > qp) continue;
        int n_vis = 0;
        for (int i = 0; i < ts; ++i) {
          vis[i] = pos[i] >= 0 && pos[i] >= lo && pos[i] <= qp;
          n_vis += vis[i];
        }
        if (n_vis == 0) continue;
        for (int j = 0; j < b.group; ++j) {
          const std::int64_t row = static_cast<std::int64_t>(t) * b.n_heads + b.kv_head * b.group + j;
          const float* qr = b.q + row * d;
          int i = 0;
          for (; i + 4 <= ts; i += 4)
            dot4(qr, kt + i * stride, kt + (i + 1) * stride, kt + (i + 2) * stride, kt + (i + 3) * stride, d, sc + i);
          for (; i < ts; ++i) sc[i] = dot1(qr, kt + i * stride, d);
          float tmax = kNegInf;
          for (i = 0; i < kAttnTile; ++i) {
            sc[i] = i < ts && vis[i] ? b.scale * sc[i] : kNegInf;
            tmax = std::max(tmax, sc[i]);
          }
          float& m = b.m[row];
          float& l = b.l[row];
          const float m_new = std::max(m, tmax);
          // e^(old max - new max) rescales the state; exactly 1 when the max did not move and
          // exactly 0 on the first visible tile (m = -inf), where l and acc are still 0.
          const float corr = exp1(m - m_new);
          const R mv = V::set1(m_new);
          R sum = V::zero();
          for (i = 0; i < kAttnTile; i += W) {
            const R pw = exp(V::sub(V::load(sc + i), mv));  // masked: e^-inf = 0
            V::store(sc + i, pw);
            sum = V::add(sum, pw);
          }
          l = l * corr + V::hsum(sum);
          m = m_new;
          pv(b.acc + row * d, corr, sc, vt, stride, ts, d);
        }
      }
    }
  }
};

}  // namespace
}  // namespace ringlm::kernels
