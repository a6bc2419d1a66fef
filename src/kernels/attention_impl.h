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
  // Decode prefetches the next tile into L2 (__builtin_prefetch locality 2, prefetcht1 on
  // x86): measured on Zen 4, into L1 (locality 3) or non-temporal (0) the 8k decode was ~1.5x
  // slower (the next tile evicts the current one from L1), and two tiles ahead was no faster.
  static constexpr int kPrefetchLocality = 2;
  static constexpr int NC = V::kCols;

  // sc[r][i + s] = q_r . k_{i+s} for s < NS. Per element: one FMA chain over the d/W register
  // steps, the horizontal sum, then the scalar tail; the same order whatever NQ and NS are,
  // so a row's scores do not depend on how rows and slots are blocked.
  //
  // With PF, the same NS rows of the next K tile (pfk) are prefetched, one cache line per line
  // of K read here (pv_block does the same for V), so a single-token block, which uses each
  // tile once, has the next tile on its way from memory while this one is computed: the
  // hardware prefetcher alone left the loads waiting on DRAM (docs/attention.md, "Decode").
  template <int NQ, int NS, bool PF = false>
  static void scores_block(const float* const* qr, const T* kt, std::int64_t stride, int i, int d,
                           float (*sc)[kAttnTile], const T* pfk = nullptr) {
    R acc[NQ][NS];
#pragma GCC unroll 16
    for (int r = 0; r < NQ; ++r)
#pragma GCC unroll 16
      for (int s = 0; s < NS; ++s) acc[r][s] = V::zero();
    const T* k[NS];
#pragma GCC unroll 16
    for (int s = 0; s < NS; ++s) k[s] = kt + (i + s) * stride;
    // One register step: each K register feeds NQ FMAs, each q register NS.
    auto step = [&](int c) {
      R kv[NS];
#pragma GCC unroll 16
      for (int s = 0; s < NS; ++s) kv[s] = kv_load(k[s] + c);
#pragma GCC unroll 16
      for (int r = 0; r < NQ; ++r) {
        R qv = V::load(qr[r] + c);
        // Loaded once into a register where V::pin exists: GCC otherwise folds the load into
        // each of the NS FMAs. Measured on Zen 4 (AVX-512, 8 x 2 decode block): f16 K 5-10%
        // faster pinned, f32 K ~25% slower (there the K loads are full registers too), so
        // only the f16 instantiation pins.
        if constexpr (NS > 1 && sizeof(T) == 2 && requires { V::pin(qv); }) V::pin(qv);
#pragma GCC unroll 16
        for (int s = 0; s < NS; ++s) acc[r][s] = V::fma(qv, kv[s], acc[r][s]);
      }
    };
    int c = 0;
    if constexpr (PF) {
      // A cache line of every K row at a time, starting with the prefetch of the same line
      // of the next tile's K rows.
      constexpr int kLine = 64 / static_cast<int>(sizeof(T));  // elements per line, a multiple of W
      for (; c + kLine <= d; c += kLine) {
#pragma GCC unroll 16
        for (int s = 0; s < NS; ++s) {
          __builtin_prefetch(pfk + (i + s) * stride + c, 0, kPrefetchLocality);
        }
#pragma GCC unroll 4
        for (int cc = c; cc < c + kLine; cc += W) step(cc);
      }
    }
    for (; c + W <= d; c += W) step(c);
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
  // per tile and each V load feeds NQ rows. pfv, pn: the next V tile, prefetched for slots < pn.
  template <int NQ, int NCB>
  static void pv_block(float* const* acc, const float* corr, const float (*p)[kAttnTile], const T* vt,
                       std::int64_t stride, int ts, const bool* any, int c0, const T* pfv = nullptr,
                       int pn = 0) {
    constexpr int kBytes = NCB * W * static_cast<int>(sizeof(T));  // of one V row per slot
    R a[NQ][NCB];
#pragma GCC unroll 16
    for (int r = 0; r < NQ; ++r) {
      const R cr = V::set1(corr[r]);
#pragma GCC unroll 16
      for (int j = 0; j < NCB; ++j) a[r][j] = V::mul(V::load(acc[r] + c0 + j * W), cr);
    }
    for (int s = 0; s < ts; ++s) {
      // The same columns of the next tile's V row (decode; pn = 0 otherwise), one prefetch per
      // cache line: a block narrower than a line prefetches only where a line starts.
      if (s < pn && (kBytes >= 64 || (c0 * static_cast<int>(sizeof(T))) % 64 == 0)) {
#pragma GCC unroll 4
        for (int by = 0; by < kBytes; by += 64)
          __builtin_prefetch(pfv + s * stride + c0 + by / static_cast<int>(sizeof(T)), 0, kPrefetchLocality);
      }
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

  template <int NQ, int NCX>
  static void pv(float* const* acc, const float* corr, const float (*p)[kAttnTile], const T* vt,
                 std::int64_t stride, int ts, const bool* any, int d, const T* pfv = nullptr, int pn = 0) {
    int c = 0;
    for (; c + NCX * W <= d; c += NCX * W) pv_block<NQ, NCX>(acc, corr, p, vt, stride, ts, any, c, pfv, pn);
    for (; c + W <= d; c += W) pv_block<NQ, 1>(acc, corr, p, vt, stride, ts, any, c, pfv, pn);
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

  // One token's visibility of a tile, in the forms rows() uses: vis[s] for P.V (skip a slot
  // no row of the token sees), and per lane keep = 1 / 0 and bias = 0 / -inf, so the scores
  // are masked with vector ops: zero_below(keep, 0.5, s) + bias is s where visible (s + 0 = s)
  // and -inf elsewhere (0 + -inf), never NaN. Lanes past the tile's end are masked.
  struct TileMask {
    alignas(64) float keep[kAttnTile];
    alignas(64) float bias[kAttnTile];
    bool vis[kAttnTile];
  };

  // Query heads [j0, j0 + NQ) of the group for token t against one tile: scores (NQ rows x
  // KSX slots per register block), the online softmax update of each row's (m, l), then
  // acc = acc * e^(m_old - m_new) + P.V (NQ rows x NCX column registers). Every row gets the
  // same operations in the same order whatever NQ, KSX and NCX are (one FMA chain per score,
  // lane-wise exp, the P.V sum over slots in slot order), so the blocking never changes results.
  template <int NQ, int KSX, int NCX>
  static void rows(const AttnBlock& b, int t, int j0, const T* kt, const T* vt, std::int64_t stride, int ts,
                   const TileMask& mk, const T* pfk = nullptr, const T* pfv = nullptr, int pn = 0) {
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
    for (; i + KSX <= ts; i += KSX)
      if (i + KSX <= pn) scores_block<NQ, KSX, true>(qr, kt, stride, i, d, sc, pfk);
      else scores_block<NQ, KSX>(qr, kt, stride, i, d, sc);
    for (; i < ts; ++i) scores_block<NQ, 1>(qr, kt, stride, i, d, sc);
    for (int r = 0; r < NQ; ++r)  // a partial tile: defined values in the masked lanes
      for (int s = ts; s < kAttnTile; ++s) sc[r][s] = 0.0f;
    // Scale, mask and each row's tile max in registers (was a scalar loop per score); the
    // rescale factors e^(m_old - m_new) of all rows in one vector exp (each lane the value
    // exp1 gives).
    const R scale = V::set1(b.scale), half = V::set1(0.5f);
    constexpr int kLanes = (NQ + W - 1) / W * W;
    alignas(64) float diff[kLanes] = {}, corr[kLanes];
    for (int r = 0; r < NQ; ++r) {
      R mx = V::set1(-std::numeric_limits<float>::infinity());
      for (i = 0; i < kAttnTile; i += W) {
        const R s = V::add(V::zero_below(V::load(mk.keep + i), half, V::mul(scale, V::load(sc[r] + i))),
                           V::load(mk.bias + i));
        V::store(sc[r] + i, s);
        mx = V::max(mx, s);
      }
      const float m = b.m[row[r]];
      const float m_new = std::max(m, V::hmax(mx));
      // e^(old max - new max) rescales the state: exactly 1 when the max did not move and
      // exactly 0 on the first visible tile (m = -inf), where l and acc are still 0.
      diff[r] = m - m_new;
      b.m[row[r]] = m_new;
    }
    for (i = 0; i < kLanes; i += W) V::store(corr + i, exp(V::load(diff + i)));
    for (int r = 0; r < NQ; ++r) {
      const R mv = V::set1(b.m[row[r]]);
      R sum = V::zero();
      for (i = 0; i < kAttnTile; i += W) {
        const R pw = exp(V::sub(V::load(sc[r] + i), mv));  // masked: e^-inf = 0
        V::store(sc[r] + i, pw);
        sum = V::add(sum, pw);
      }
      b.l[row[r]] = b.l[row[r]] * corr[r] + V::hsum(sum);
    }
    if (pn > 0) pv<NQ, NCX>(acc, corr, sc, vt, stride, ts, mk.vis, d, pfv, pn);
    else pv<NQ, NCX>(acc, corr, sc, vt, stride, ts, mk.vis, d);
  }

  // Register blocking of a single-token (decode) block: V::kDecodeRows heads at a time (8 on
  // AVX-512, so one pass over the K/V tile serves all 8 heads of an E2B group where rows of
  // 4 stream it twice), with V::kDecodeSlots x V::kDecodeCols blocks that keep the
  // accumulators in the register file. ISAs without these constants use the chunk blocking.
  static constexpr int decode_rows() {
    if constexpr (requires { V::kDecodeRows; }) return V::kDecodeRows;
    else return 4;
  }
  static constexpr int decode_slots() {
    if constexpr (requires { V::kDecodeSlots; }) return V::kDecodeSlots;
    else return KS;
  }
  static constexpr int decode_cols() {
    if constexpr (requires { V::kDecodeCols; }) return V::kDecodeCols;
    else return NC;
  }

  // All heads of the group for token t: blocks of NQ rows, then what is left in rows of 4
  // (and 3, 2, 1) with the chunk blocking.
  // pfk, pfv, pn: the next tile to prefetch (decode), handed to the first block of rows only.
  template <int NQ, int KSX, int NCX>
  static void group_rows(const AttnBlock& b, int t, const T* kt, const T* vt, std::int64_t stride, int ts,
                         const TileMask& mk, const T* pfk = nullptr, const T* pfv = nullptr, int pn = 0) {
    int j = 0;
    if constexpr (NQ != 4)
      for (; j + NQ <= b.group; j += NQ) {
        rows<NQ, KSX, NCX>(b, t, j, kt, vt, stride, ts, mk, pfk, pfv, pn);
        pn = 0;
      }
    for (; j + 4 <= b.group; j += 4) {
      rows<4, KS, NC>(b, t, j, kt, vt, stride, ts, mk, pfk, pfv, pn);
      pn = 0;
    }
    switch (b.group - j) {
      case 3: rows<3, KS, NC>(b, t, j, kt, vt, stride, ts, mk, pfk, pfv, pn); break;
      case 2: rows<2, KS, NC>(b, t, j, kt, vt, stride, ts, mk, pfk, pfv, pn); break;
      case 1: rows<1, KS, NC>(b, t, j, kt, vt, stride, ts, mk, pfk, pfv, pn); break;
      default: break;
    }
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
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    TileMask mk;
    const bool one_token = b.t_end - b.t_begin == 1;
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
        for (int i = 0; i < kAttnTile; ++i) {
          const bool v = i < ts && pos[i] >= 0 && pos[i] >= lo && pos[i] <= qp;
          mk.vis[i] = v;
          mk.keep[i] = v ? 1.0f : 0.0f;
          mk.bias[i] = v ? 0.0f : kNegInf;
          n_vis += v;
        }
        if (n_vis == 0) continue;
        if (one_token) {
          // The next tile (if any) is prefetched while this one is computed.
          const int pn = std::min(kAttnTile, b.s_end - s0 - kAttnTile);
          const T* pfk = pn > 0 ? kt + kAttnTile * stride : nullptr;
          const T* pfv = pn > 0 ? vt + kAttnTile * stride : nullptr;
          group_rows<decode_rows(), decode_slots(), decode_cols()>(b, t, kt, vt, stride, ts, mk, pfk, pfv,
                                                                   std::max(pn, 0));
        }
        else group_rows<4, KS, NC>(b, t, kt, vt, stride, ts, mk);
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
