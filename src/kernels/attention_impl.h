// Internal: the attention kernel body, written once over a small vector-traits type V and
// included by each attention_<isa>.cpp after its `#pragma GCC target`. V provides
//   R (register type), W (floats per register), zero, set1, load, store, add, sub, mul,
//   fma(a, b, c) = a * b + c, min, max, hsum, hmax, round (to nearest, ties to even),
//   pow2i(k) = 2^k for integral k in [-127, 127] (0 for -127), zero_below(x, t, y) = x >= t ? y : 0,
//   load_half(const uint16_t*) = W binary16 values widened to f32 (exact), and
//   store_half(uint16_t*, R) = W values rounded to binary16 (to nearest even; the caller clamps).
// The kernel is instantiated for K/V element type T = float and T = std::uint16_t (f16 bits):
// only the K and V loads differ (kv_load), so an f16 cache gives exactly what the f32 kernel
// gives on the widened values.
// Everything here has internal linkage (anonymous namespace), so the differently targeted
// copies in each ISA file never meet at link time. Design: docs/attention.md.
#pragma once

namespace ringlm::kernels {
namespace {

// kAttnTile (attention_table.h): a tile is scored against one query row at a time into a
// stack array; 32 slots keep a d=256 K tile (32 KiB) in L1 and a d=512 one (64 KiB) in L2
// while the group's heads and the chunk's tokens reuse it.
template <class V, class T = float>
struct AttnImpl {
  using R = typename V::R;
  static constexpr int W = V::W;
  static_assert(kAttnTile % W == 0, "the tile must be whole registers");

  static R kv_load(const float* p) { return V::load(p); }
  static R kv_load(const std::uint16_t* p) { return V::load_half(p); }
  static float kv_one(float x) { return x; }
  static float kv_one(std::uint16_t h) { return fp16_to_f32(h); }  // exact, as load_half
  // The scalar tails (head_dim not a multiple of W) first widen their K/V elements into a
  // float array and then run the same multiply-adds on it for both element types, so the
  // compiler's FMA contraction cannot differ between the f32 and the f16 instantiation.
  static void widen_strided(const T* src, std::int64_t stride, int n, float* dst) {
    for (int i = 0; i < n; ++i) dst[i] = kv_one(src[i * stride]);
  }

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

  // Register blocks: NQ query rows (heads of one token, sharing the K/V tile and its mask)
  // x KS key slots for the scores, NQ rows x NC registers of columns for P.V; V::kSlots and
  // V::kCols are chosen per ISA so the accumulators fit the register file (AVX-512 and NEON:
  // 4 x 4 = 16 of 32 registers; AVX2: 4 x 2 = 8 of 16). Each K or V load feeds NQ FMAs.
  static constexpr int KS = V::kSlots;
  static constexpr int NC = V::kCols;

  // sc[r][i + s] = q_r . k_{i+s} for s < NS. Per element: one FMA chain over the d/W register
  // steps, the horizontal sum, then the scalar tail; the same order whatever NQ and NS are,
  // so a row's scores do not depend on how rows and slots are blocked.
  template <int NQ, int NS>
  static void scores_block(const float* const* qr, const T* kt, std::int64_t stride, int i, int d,
                           float (*sc)[kAttnTile]) {
    R acc[NQ][NS];
#pragma GCC unroll 16
    for (int r = 0; r < NQ; ++r)
#pragma GCC unroll 16
      for (int s = 0; s < NS; ++s) acc[r][s] = V::zero();
    const T* k[NS];
#pragma GCC unroll 16
    for (int s = 0; s < NS; ++s) k[s] = kt + (i + s) * stride;
    int c = 0;
    for (; c + W <= d; c += W) {
      R kv[NS];
#pragma GCC unroll 16
      for (int s = 0; s < NS; ++s) kv[s] = kv_load(k[s] + c);
#pragma GCC unroll 16
      for (int r = 0; r < NQ; ++r) {
        const R qv = V::load(qr[r] + c);
#pragma GCC unroll 16
        for (int s = 0; s < NS; ++s) acc[r][s] = V::fma(qv, kv[s], acc[r][s]);
      }
    }
    if constexpr (NQ * NS == 16 && requires { V::hsum16(&acc[0][0], &sc[0][0]); }) {
      if (c == d) {  // no tail: the 16 sums at once, each in V::hsum's order (same bits)
        alignas(64) float t[16];
        V::hsum16(&acc[0][0], t);
        for (int r = 0; r < NQ; ++r)
          for (int s = 0; s < NS; ++s) sc[r][i + s] = t[r * NS + s];
        return;
      }
    }
    float tail[NS][W];
    for (int s = 0; s < NS; ++s) widen_strided(k[s] + c, 1, d - c, tail[s]);
    for (int r = 0; r < NQ; ++r)
      for (int s = 0; s < NS; ++s) {
        float t = V::hsum(acc[r][s]);
        for (int cc = c; cc < d; ++cc) t += qr[r][cc] * tail[s][cc - c];
        sc[r][i + s] = t;
      }
  }

  // acc_r[c] = acc_r[c] * corr_r + sum_s p_r[s] v_s[c] for columns [c0, c0 + NCB * W): the
  // accumulators stay in registers across the tile's slots, so acc is read and written once
  // per tile and each V load feeds NQ rows.
  template <int NQ, int NCB>
  static void pv_block(float* const* acc, const float* corr, const float (*p)[kAttnTile], const T* vt,
                       std::int64_t stride, int ts, const bool* any, int c0) {
    R a[NQ][NCB];
#pragma GCC unroll 16
    for (int r = 0; r < NQ; ++r) {
      const R cr = V::set1(corr[r]);
#pragma GCC unroll 16
      for (int j = 0; j < NCB; ++j) a[r][j] = V::mul(V::load(acc[r] + c0 + j * W), cr);
    }
    for (int s = 0; s < ts; ++s) {
      if (!any[s]) continue;  // masked for the whole token (all its rows have p = 0)
      const T* vs = vt + s * stride + c0;
      R vv[NCB];
#pragma GCC unroll 16
      for (int j = 0; j < NCB; ++j) vv[j] = kv_load(vs + j * W);
#pragma GCC unroll 16
      for (int r = 0; r < NQ; ++r) {
        const R ps = V::set1(p[r][s]);
#pragma GCC unroll 16
        for (int j = 0; j < NCB; ++j) a[r][j] = V::fma(ps, vv[j], a[r][j]);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < NQ; ++r)
#pragma GCC unroll 16
      for (int j = 0; j < NCB; ++j) V::store(acc[r] + c0 + j * W, a[r][j]);
  }

  template <int NQ>
  static void pv(float* const* acc, const float* corr, const float (*p)[kAttnTile], const T* vt,
                 std::int64_t stride, int ts, const bool* any, int d) {
    int c = 0;
    for (; c + NC * W <= d; c += NC * W) pv_block<NQ, NC>(acc, corr, p, vt, stride, ts, any, c);
    for (; c + W <= d; c += W) pv_block<NQ, 1>(acc, corr, p, vt, stride, ts, any, c);
    for (; c < d; ++c) {
      float col[kAttnTile];
      widen_strided(vt + c, stride, ts, col);
      for (int r = 0; r < NQ; ++r) {
        float t = acc[r][c] * corr[r];
        for (int s = 0; s < ts; ++s)
          if (any[s]) t += p[r][s] * col[s];
        acc[r][c] = t;
      }
    }
  }

  // Query heads [j0, j0 + NQ) of the group for token t against one tile: scores, the online
  // softmax update of each row's (m, l), then acc = acc * e^(m_old - m_new) + P.V.
  template <int NQ>
  static void rows(const AttnBlock& b, int t, int j0, const T* kt, const T* vt, std::int64_t stride, int ts,
                   const bool* vis) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    const int d = b.kv.head_dim;
    const float* qr[NQ];
    float* acc[NQ];
    std::int64_t row[NQ];
    for (int r = 0; r < NQ; ++r) {
      row[r] = static_cast<std::int64_t>(t) * b.n_heads + b.kv_head * b.group + j0 + r;
      qr[r] = b.q + row[r] * d;
      acc[r] = b.acc + row[r] * d;
    }
    alignas(64) float sc[NQ][kAttnTile];
    int i = 0;
    for (; i + KS <= ts; i += KS) scores_block<NQ, KS>(qr, kt, stride, i, d, sc);
    for (; i < ts; ++i) scores_block<NQ, 1>(qr, kt, stride, i, d, sc);
    float corr[NQ];
    for (int r = 0; r < NQ; ++r) {
      float tmax = kNegInf;
      for (i = 0; i < kAttnTile; ++i) {
        sc[r][i] = i < ts && vis[i] ? b.scale * sc[r][i] : kNegInf;
        tmax = std::max(tmax, sc[r][i]);
      }
      float& m = b.m[row[r]];
      float& l = b.l[row[r]];
      const float m_new = std::max(m, tmax);
      // e^(old max - new max) rescales the state; exactly 1 when the max did not move and
      // exactly 0 on the first visible tile (m = -inf), where l and acc are still 0.
      corr[r] = exp1(m - m_new);
      const R mv = V::set1(m_new);
      R sum = V::zero();
      for (i = 0; i < kAttnTile; i += W) {
        const R pw = exp(V::sub(V::load(sc[r] + i), mv));  // masked: e^-inf = 0
        V::store(sc[r] + i, pw);
        sum = V::add(sum, pw);
      }
      l = l * corr[r] + V::hsum(sum);
      m = m_new;
    }
    pv<NQ>(acc, corr, sc, vt, stride, ts, vis, d);
  }

  static const T* kv_base(const KvSlots& kv, bool keys) {
    if constexpr (sizeof(T) == 2) return keys ? kv.k16 : kv.v16;
    else return keys ? kv.k : kv.v;
  }

  static void block(const AttnBlock& b) {
    const int d = b.kv.head_dim;
    const std::int64_t stride = static_cast<std::int64_t>(b.kv.n_kv_heads) * d;
    const T* kbase = kv_base(b.kv, true) + static_cast<std::int64_t>(b.kv_head) * d;
    const T* vbase = kv_base(b.kv, false) + static_cast<std::int64_t>(b.kv_head) * d;
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
      const T* kt = kbase + s0 * stride;
      const T* vt = vbase + s0 * stride;
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
        int j = 0;
        for (; j + 4 <= b.group; j += 4) rows<4>(b, t, j, kt, vt, stride, ts, vis);
        switch (b.group - j) {
          case 3: rows<3>(b, t, j, kt, vt, stride, ts, vis); break;
          case 2: rows<2>(b, t, j, kt, vt, stride, ts, vis); break;
          case 1: rows<1>(b, t, j, kt, vt, stride, ts, vis); break;
          default: break;
        }
      }
    }
  }

  // y = binary16(clamp(x, -65504, 65504)), rounded to nearest even: saturating, so a value
  // beyond the f16 range is stored as the largest finite half instead of inf (which would
  // turn the softmax into NaN). Whole registers through V::store_half, the tail through the
  // scalar rule (the same bits: both round to nearest even). NaN in: unspecified out.
  static void store_f16(const float* x, std::uint16_t* y, std::size_t n) {
    const R lo = V::set1(-65504.0f), hi = V::set1(65504.0f);
    std::size_t i = 0;
    for (; i + W <= n; i += W) V::store_half(y + i, V::min(V::max(V::load(x + i), lo), hi));
    for (; i < n; ++i) y[i] = f32_to_fp16(std::min(std::max(x[i], -65504.0f), 65504.0f));
  }
  static void widen_f16(const std::uint16_t* x, float* y, std::size_t n) {
    std::size_t i = 0;
    for (; i + W <= n; i += W) V::store(y + i, V::load_half(x + i));
    for (; i < n; ++i) y[i] = fp16_to_f32(x[i]);
  }
};

}  // namespace
}  // namespace ringlm::kernels
