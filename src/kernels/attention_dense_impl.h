// Internal: the dense attention of the towers (attend_dense, attention.h), written once over
// the vector traits V of attention_impl.h and included by each attention_<isa>.cpp after it
// (it uses AttnImpl<V>::exp, so a tower's softmax has the decoder's exp to the bit). V adds
//   kDenseRows: query rows per register block, and
//   kDenseRegs: registers of keys (scores) or of head_dim columns (P.V) per block,
// chosen so kDenseRows x kDenseRegs accumulators plus one block of loads fit the register
// file. Design: docs/attention.md, "Dense attention of the towers".
#pragma once

#include <type_traits>

namespace ringlm::kernels {
namespace {

template <class V>
struct DenseImpl {
  using R = typename V::R;
  static constexpr int W = V::W;
  static constexpr int MR = V::kDenseRows;
  static constexpr int NB = V::kDenseRegs;
  static constexpr int KT = kDenseKeys;
  static_assert(KT % (NB * W) == 0, "a key tile must be whole register blocks");
  static_assert(kDenseQueries % MR == 0, "a query block must be whole register blocks");

  // sc[r][j] = q_r . k_j for NR query rows against the tile's first `ts` keys (rounded up to
  // a register block; beyond ts the packed keys are 0). kt is the tile packed [d][KT], so a
  // register holds W keys' values of one channel: each K load feeds NR FMAs, each broadcast
  // query value NB, and no horizontal sums are needed. Per score: one FMA chain over the
  // channels in order, whatever NR is.
  template <int NR>
  static void scores(const float* const* qr, const float* kt, int d, int ts, float (*sc)[KT]) {
    for (int j0 = 0; j0 < ts; j0 += NB * W) {
      R acc[NR][NB];
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r)
#pragma GCC unroll 16
        for (int b = 0; b < NB; ++b) acc[r][b] = V::zero();
      const float* kp = kt + j0;
      for (int c = 0; c < d; ++c, kp += KT) {
        R kv[NB];
#pragma GCC unroll 16
        for (int b = 0; b < NB; ++b) kv[b] = V::load(kp + b * W);
#pragma GCC unroll 16
        for (int r = 0; r < NR; ++r) {
          const R qv = V::set1(qr[r][c]);
#pragma GCC unroll 16
          for (int b = 0; b < NB; ++b) acc[r][b] = V::fma(qv, kv[b], acc[r][b]);
        }
      }
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r)
#pragma GCC unroll 16
        for (int b = 0; b < NB; ++b) V::store(sc[r] + j0 + b * W, acc[r][b]);
    }
  }

  // One row's online-softmax step over a tile: scores scaled, keys past ts masked, the new
  // running max m, p = e^(score - m) in place, l = l * corr + sum p. Returns corr =
  // e^(old m - new m): exactly 0 on the first tile (m = -inf, l and the output still 0).
  static float softmax_row(float* s, int ts, float scale, float& m, float& l) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    const R sv = V::set1(scale);
    for (int j = 0; j < ts; j += W) V::store(s + j, V::mul(V::load(s + j), sv));  // what scores() wrote
    for (int j = ts; j < KT; ++j) s[j] = kNegInf;
    R mx = V::set1(kNegInf);
    for (int j = 0; j < KT; j += W) mx = V::max(mx, V::load(s + j));
    const float m_new = std::max(m, V::hmax(mx));
    const float corr = AttnImpl<V>::exp1(m - m_new);
    const R mv = V::set1(m_new);
    R sum = V::zero();
    for (int j = 0; j < KT; j += W) {
      const R p = AttnImpl<V>::exp(V::sub(V::load(s + j), mv));  // masked: e^-inf = 0
      V::store(s + j, p);
      sum = V::add(sum, p);
    }
    l = l * corr + V::hsum(sum);
    m = m_new;
    return corr;
  }

  // o_r[c] = o_r[c] * corr_r + sum_{s < ts} p_r[s] v_s[c] for columns [c0, c0 + NC * W): the
  // accumulators stay in registers over the tile's keys; each V load feeds NR rows.
  template <int NR, int NC>
  static void pv_cols(float* const* o, const float* corr, const float (*p)[KT], const float* v,
                      std::int64_t stride, int ts, int c0) {
    R a[NR][NC];
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r) {
      const R cr = V::set1(corr[r]);
#pragma GCC unroll 16
      for (int j = 0; j < NC; ++j) a[r][j] = V::mul(V::load(o[r] + c0 + j * W), cr);
    }
    const float* vs = v + c0;
    for (int s = 0; s < ts; ++s, vs += stride) {
      R vv[NC];
#pragma GCC unroll 16
      for (int j = 0; j < NC; ++j) vv[j] = V::load(vs + j * W);
#pragma GCC unroll 16
      for (int r = 0; r < NR; ++r) {
        const R ps = V::set1(p[r][s]);
#pragma GCC unroll 16
        for (int j = 0; j < NC; ++j) a[r][j] = V::fma(ps, vv[j], a[r][j]);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 16
      for (int j = 0; j < NC; ++j) V::store(o[r] + c0 + j * W, a[r][j]);
  }

  template <int NR>
  static void pv(float* const* o, const float* corr, const float (*p)[KT], const float* v, std::int64_t stride,
                 int ts, int d) {
    int c = 0;
    for (; c + NB * W <= d; c += NB * W) pv_cols<NR, NB>(o, corr, p, v, stride, ts, c);
    for (; c + W <= d; c += W) pv_cols<NR, 1>(o, corr, p, v, stride, ts, c);
    for (; c < d; ++c)  // head_dim not a multiple of W: the last columns one at a time
      for (int r = 0; r < NR; ++r) {
        float t = o[r][c] * corr[r];
        for (int s = 0; s < ts; ++s) t += p[r][s] * v[s * stride + c];
        o[r][c] = t;
      }
  }

  // f(r, std::integral_constant<int, NR>) for the register blocks of rows [0, n): whole
  // blocks of MR, then one block of the n % MR rows left.
  template <int K, class F>
  static void tail_rows(int r, int left, F& f) {
    if constexpr (K >= 1) {
      if (left == K) f(r, std::integral_constant<int, K>{});
      else tail_rows<K - 1>(r, left, f);
    }
  }
  template <class F>
  static void by_rows(int n, F&& f) {
    int r = 0;
    for (; r + MR <= n; r += MR) f(r, std::integral_constant<int, MR>{});
    tail_rows<MR - 1>(r, n - r, f);
  }

  // One unit: b.rows query rows of one head against every key, tile by tile; each K^T and
  // V tile is loaded into cache once per unit and used by all its rows, whose scores
  // (kDenseQueries x kDenseKeys floats, 12 KiB) stay in L1.
  static void unit(const DenseBlock& b) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    const int d = b.head_dim, n = b.rows;
    const float* qr[kDenseQueries];
    float* o[kDenseQueries];
    float m[kDenseQueries], l[kDenseQueries], corr[kDenseQueries];
    for (int r = 0; r < n; ++r) {
      qr[r] = b.q + r * b.q_stride;
      o[r] = b.out + r * b.out_stride;
      std::fill(o[r], o[r] + d, 0.0f);
      m[r] = kNegInf;
      l[r] = 0.0f;
    }
    if (b.n_keys == 0) return;  // nothing to attend to: zeros, as attend_one
    alignas(64) float sc[kDenseQueries][KT];
    for (int s0 = 0; s0 < b.n_keys; s0 += KT) {
      const int ts = std::min(KT, b.n_keys - s0);
      const float* kt = b.kt + static_cast<std::int64_t>(s0) * d;  // tile s0 / KT of [tiles][d][KT]
      const float* vt = b.v + s0 * b.v_stride;
      by_rows(n, [&](int r, auto nr) { scores<decltype(nr)::value>(qr + r, kt, d, ts, sc + r); });
      for (int r = 0; r < n; ++r) corr[r] = softmax_row(sc[r], ts, b.scale, m[r], l[r]);
      by_rows(n, [&](int r, auto nr) { pv<decltype(nr)::value>(o + r, corr + r, sc + r, vt, b.v_stride, ts, d); });
    }
    for (int r = 0; r < n; ++r) {
      const float inv = 1.0f / l[r];
      for (int c = 0; c < d; ++c) o[r][c] *= inv;
    }
  }
};

}  // namespace
}  // namespace ringlm::kernels
