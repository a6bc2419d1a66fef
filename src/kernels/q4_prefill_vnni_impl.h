// Internal: the prefill GEMM of the AVX-512 VNNI path (kPrefillMinRows or more activation
// rows), included by q4_kernels_avx512_impl.h inside its anonymous namespace after the tile
// (q4_tile_vnni_impl.h), whose packed rows (TilePackBlock) it reads.
//
// Status: dispatched only when switched on (set_q4_prefill_gemm, RINGLM_Q4_PREFILL=1). On the
// Zen 5 VM it was 4-9 % slower than the tile in E2B prefill 512 (alternating runs, loaded
// host, BENCHMARKS.md "Prefill GEMM"); with the weights in cache (bench_kernels, one thread)
// it was level with the tile within the host's noise. Kept, tested, for other hosts and as
// the base for the next attempt; what was tried is in docs/kernels.md.
//
// What differs from the tile, which serves 2..16 rows (a batched decode step):
//   * Register tile of 2 groups (32 output rows) x 4 activation rows instead of 1 group x 8
//     rows: each activation broadcast is loaded once into a register and feeds both groups'
//     dots (the tile folds one broadcast load into every vpdpbusd), and with one plane each
//     row keeps separate low- and high-nibble chains, so there are 16 independent dot chains
//     in both modes (the tile's one-plane form had 8 chains of depth 8, latency-bound at a
//     4-cycle vpdpbusd and 2 issues per cycle).
//   * Cache blocking for long prompts: K is cut into chunks of kPrefillKChunk blocks (two
//     groups' chunk is 18 KB of codes, L1) and the rows into panels of kPrefillPanelTiles
//     tiles (64 rows x 32 blocks x 2 planes: 160 KB of packed rows, L2); every group pair of
//     the thread's share runs over one panel before the next panel. The tile reads all rows
//     of the prompt once per group, which for 512 rows (2 MB of packed rows per K chunk)
//     streams from L3 for every 16 output rows.
// The arithmetic per output is exactly the tile's: the same exact int32 block sums (integer
// additions in another order), the same float steps per block in block order, and partial
// sums stored to y between K chunks (a float store and reload is exact). So every output is
// bit-identical to the tile and to the GEMV (test Q4Prefill.*).

constexpr std::size_t kPrefillMinRows = 17;
// Blocks per K chunk and tiles (8 rows each) per row panel; see above.
constexpr std::size_t kPrefillKChunk = 32;
constexpr std::size_t kPrefillPanelTiles = 8;
// Prefetch distance and hint of the verify driver's pair streams (q4_matmul_groups_vnni_pairs).
// With T1: bench_kernels --gemm-weights dram, 3-8 rows, two sittings of two rounds: 8 KB 5-12 %
// faster than 16 KB on the short-K shapes (q+k+v, gate/up, per-layer), level on down; 4 and
// 6 KB level with 8 KB, 24 and 32 KB slower. Since 2026-12-07 non-temporal (NTA) at 4 KB, as the
// GEMV: 8 rows, 2 threads, two rounds on the Zen 5 VM: level to 9 % less time a call, never
// slower (the 8-row step is closer to compute-bound than the GEMV; docs/bench/decode.md).
#ifndef RINGLM_PAIR_PREFETCH_BYTES
#define RINGLM_PAIR_PREFETCH_BYTES 4096
#endif
#ifndef RINGLM_PAIR_PREFETCH_HINT
#define RINGLM_PAIR_PREFETCH_HINT _MM_HINT_NTA
#endif
constexpr std::size_t kPairPrefetchBytes = RINGLM_PAIR_PREFETCH_BYTES;

// Activation rows per register tile (half a TilePackBlock).
constexpr int kPrefillRows = 4;

// acc[g][i] (16 rows of group g) += W_g[:, blocks b0..b1) . packed row (r0 + i), for NG
// groups (codes/scales of each) and R rows.
// With `prefetch` (the first register tile of a panel over this chunk: the later ones find the
// codes in L1/L2) the code and scale streams are prefetched into L2 as far ahead as the tile
// does: a prefill step reads every weight from DRAM once, and without it the kernel waited on
// demand misses (E2B prefill 512 was ~10 % slower than the tile in alternating runs).
template <int NG, int R, bool kTwoPlanes>
inline void q4_prefill_rows(const std::uint8_t* const codes[NG], const std::uint16_t* const scales[NG],
                            std::size_t b0, std::size_t b1, const TilePackBlock* pk, int r0, bool prefetch,
                            __m512 acc[NG][R], std::size_t pair_nb = 0) {
  const __m512i mask = _mm512_set1_epi8(0x0f);
  for (std::size_t b = b0; b < b1; ++b) {
    const TilePackBlock& p = pk[b];
    if (prefetch) {
#pragma GCC unroll 2
      for (int g = 0; g < NG; ++g) {
        const std::size_t dist = pair_nb != 0 ? kPairPrefetchBytes : kTilePrefetchBytes;
        const std::size_t off = b * 256 + dist, soff = b * 32 + dist / 8;
        const char* c = reinterpret_cast<const char*>(codes[g]) + off;
        const char* sc = reinterpret_cast<const char*>(scales[g]) + soff;
        if (pair_nb != 0) {  // past this group's end: the same place in the group two ahead
          if (off >= pair_nb * 256) c += pair_nb * 320;
          if (soff >= pair_nb * 32) sc += pair_nb * 544;
        }
        if (pair_nb != 0) {
          _mm_prefetch(c, RINGLM_PAIR_PREFETCH_HINT);
          _mm_prefetch(c + 64, RINGLM_PAIR_PREFETCH_HINT);
          _mm_prefetch(c + 128, RINGLM_PAIR_PREFETCH_HINT);
          _mm_prefetch(c + 192, RINGLM_PAIR_PREFETCH_HINT);
          _mm_prefetch(sc, RINGLM_PAIR_PREFETCH_HINT);
        } else {  // prefill panels: the tile's L2 prefetch (their weights are reused across row tiles)
          _mm_prefetch(c, RINGLM_TILE_PREFETCH_HINT);
          _mm_prefetch(c + 64, RINGLM_TILE_PREFETCH_HINT);
          _mm_prefetch(c + 128, RINGLM_TILE_PREFETCH_HINT);
          _mm_prefetch(c + 192, RINGLM_TILE_PREFETCH_HINT);
          _mm_prefetch(sc, RINGLM_TILE_PREFETCH_HINT);
        }
      }
    }
    // s1: plane 1 (one plane: its low-nibble half), s2: plane 2 (one plane: high-nibble half).
    __m512i s1[NG][R], s2[NG][R];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      const __m512i b1v = _mm512_set1_epi32(p.bias1[r0 + i]);
      const __m512i b2v = kTwoPlanes ? _mm512_set1_epi32(p.bias2[r0 + i]) : _mm512_setzero_si512();
#pragma GCC unroll 2
      for (int g = 0; g < NG; ++g) {
        s1[g][i] = b1v;
        s2[g][i] = b2v;
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
      __m512i raw[NG], lo[NG];
#pragma GCC unroll 2
      for (int g = 0; g < NG; ++g) {
        raw[g] = _mm512_loadu_si512(codes[g] + b * 256 + 64 * t);
        lo[g] = _mm512_and_si512(raw[g], mask);  // elements 4t..4t+3 of each row
      }
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const __m512i a1 = bcast4(p.q1[r0 + i] + 4 * t);
#pragma GCC unroll 2
        for (int g = 0; g < NG; ++g) s1[g][i] = _mm512_dpbusd_epi32(s1[g][i], lo[g], a1);
        if (kTwoPlanes) {
          const __m512i a2 = bcast4(p.q2[r0 + i] + 4 * t);
#pragma GCC unroll 2
          for (int g = 0; g < NG; ++g) s2[g][i] = _mm512_dpbusd_epi32(s2[g][i], lo[g], a2);
        }
      }
      __m512i hi[NG];
#pragma GCC unroll 2
      for (int g = 0; g < NG; ++g) hi[g] = _mm512_and_si512(_mm512_srli_epi16(raw[g], 4), mask);  // 16+4t..
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const __m512i a1 = bcast4(p.q1[r0 + i] + 16 + 4 * t);
        if (kTwoPlanes) {
#pragma GCC unroll 2
          for (int g = 0; g < NG; ++g) s1[g][i] = _mm512_dpbusd_epi32(s1[g][i], hi[g], a1);
          const __m512i a2 = bcast4(p.q2[r0 + i] + 16 + 4 * t);
#pragma GCC unroll 2
          for (int g = 0; g < NG; ++g) s2[g][i] = _mm512_dpbusd_epi32(s2[g][i], hi[g], a2);
        } else {
#pragma GCC unroll 2
          for (int g = 0; g < NG; ++g) s2[g][i] = _mm512_dpbusd_epi32(s2[g][i], hi[g], a1);
        }
      }
    }
    // The tile's float steps: f = cvt(int block sum), acc = fma(f * ws, xd, acc).
#pragma GCC unroll 2
    for (int g = 0; g < NG; ++g) {
      const __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales[g] + b * 16)));
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const __m512i s = kTwoPlanes ? tile_combine_planes(s1[g][i], s2[g][i]) : _mm512_add_epi32(s1[g][i], s2[g][i]);
        acc[g][i] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s), ws), _mm512_set1_ps(p.xd[r0 + i]), acc[g][i]);
      }
    }
  }
}

// Output rows of groups g, g + 1, ... (NG of them) for the R packed rows r0.. of pk (activation
// rows m0 + r0 ..), blocks [b0, b1); adds to y when `accumulate`, else overwrites it.
template <int NG, int R>
inline void q4_prefill_tile(const Q4Packed& w, std::size_t g, std::size_t b0, std::size_t b1, bool accumulate,
                            bool two_planes, const TilePackBlock* pk, int r0, std::size_t m0, bool prefetch, float* y,
                            std::size_t ldy, std::size_t pair_nb = 0) {
  const std::uint8_t* codes[NG];
  const std::uint16_t* scales[NG];
  __mmask16 keep[NG];
  __m512 acc[NG][R];
  for (int j = 0; j < NG; ++j) {
    codes[j] = w.group_codes(g + j);
    scales[j] = w.group_scales(g + j);
    const std::size_t n0 = (g + j) * kQ4GroupRows;
    const std::size_t valid = w.rows - n0 < kQ4GroupRows ? w.rows - n0 : kQ4GroupRows;
    keep[j] = static_cast<__mmask16>((1u << valid) - 1u);
    for (int i = 0; i < R; ++i)
      acc[j][i] = accumulate ? _mm512_maskz_loadu_ps(keep[j], y + (m0 + r0 + i) * ldy + n0) : _mm512_setzero_ps();
  }
  if (two_planes) q4_prefill_rows<NG, R, true>(codes, scales, b0, b1, pk, r0, prefetch, acc, pair_nb);
  else q4_prefill_rows<NG, R, false>(codes, scales, b0, b1, pk, r0, prefetch, acc, pair_nb);
  for (int j = 0; j < NG; ++j)
    for (int i = 0; i < R; ++i)
      _mm512_mask_storeu_ps(y + (m0 + r0 + i) * ldy + (g + j) * kQ4GroupRows, keep[j], acc[j][i]);
}

// A register tile of exactly `rows` (1..R) rows.
template <int NG, int R>
inline void q4_prefill_tile_n(int rows, const Q4Packed& w, std::size_t g, std::size_t b0, std::size_t b1,
                              bool accumulate, bool two_planes, const TilePackBlock* pk, int r0, std::size_t m0,
                              bool prefetch, float* y, std::size_t ldy, std::size_t pair_nb = 0) {
  if (rows == R)
    return q4_prefill_tile<NG, R>(w, g, b0, b1, accumulate, two_planes, pk, r0, m0, prefetch, y, ldy, pair_nb);
  if constexpr (R > 1)
    q4_prefill_tile_n<NG, R - 1>(rows, w, g, b0, b1, accumulate, two_planes, pk, r0, m0, prefetch, y, ldy, pair_nb);
}

// Rows of the register tile that starts at packed row r0 of a tile of mt rows: 4 at a time,
// except 5 rows (one register tile) and 6 (3 + 3: a lone last row or pair of rows has only
// 4-8 dot chains per group pair, 8 deep: latency-bound). Each row's result does not depend on
// the split.
inline int prefill_register_rows(int mt, int r0) {
  if (mt == 5) return 5;  // one pass: 20 chains + 10 accumulators fit (a 6-row pass spilled)
  if (mt == 6) return 3;
  return mt - r0 < kPrefillRows ? mt - r0 : kPrefillRows;
}

// Groups [g0, g1) times all x.rows activation rows (any count; dispatched from
// kPrefillMinRows on when switched on; verify-sized steps run q4_matmul_groups_vnni_pairs).
inline void q4_matmul_groups_vnni_prefill(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x,
                                          float* y, std::size_t ldy) {
  const std::size_t nb = w.blocks_per_row();
  const std::size_t tiles = (x.rows + kVnniTileRows - 1) / kVnniTileRows;
  const TilePackBlock* pack = tile_pack_of(x);
  const bool two = x.qs2 != nullptr;
  for (std::size_t b0 = 0; b0 < nb; b0 += kPrefillKChunk) {
    const std::size_t b1 = b0 + kPrefillKChunk < nb ? b0 + kPrefillKChunk : nb;
    const bool accumulate = b0 != 0;
    for (std::size_t p0 = 0; p0 < tiles; p0 += kPrefillPanelTiles) {
      const std::size_t p1 = p0 + kPrefillPanelTiles < tiles ? p0 + kPrefillPanelTiles : tiles;
      for (std::size_t g = g0; g < g1; g += 2) {
        const bool pair = g + 1 < g1;
        for (std::size_t t = p0; t < p1; ++t) {
          const std::size_t m0 = t * kVnniTileRows;
          const int mt = static_cast<int>(x.rows - m0 < kVnniTileRows ? x.rows - m0 : kVnniTileRows);
          const TilePackBlock* pk = pack + t * nb;
          for (int r0 = 0; r0 < mt; r0 += prefill_register_rows(mt, r0)) {
            const int rows = prefill_register_rows(mt, r0);
            const bool prefetch = t == p0 && r0 == 0;
            if (pair)
              q4_prefill_tile_n<2, kPrefillRows + 1>(rows, w, g, b0, b1, accumulate, two, pk, r0, m0, prefetch, y, ldy);
            else
              q4_prefill_tile_n<1, kPrefillRows + 1>(rows, w, g, b0, b1, accumulate, two, pk, r0, m0, prefetch, y, ldy);
          }
        }
      }
    }
  }
}

// A verify-sized step (3..kVnniTileRows rows, one packed tile: pair_form_takes below) on the
// same register tiles (issue #33): group pair after group pair, so the weights stream
// in order as they do in the GEMV. The tile's loads bound it there: GCC gives each of its
// vpdpbusd its own vpbroadcastd, and this CPU issues two vector loads a cycle
// (tools/bench_dot_ports: 12 dots + 18 broadcast loads take 9 cycles), so its 64 dots per
// group and block at 4 rows waited on ~85 loads; here each broadcast feeds both groups.
// Up to 5 rows run as one register tile (two planes: 20 chains + 10 accumulators); 6-8 rows as 3 + 3,
// 4 + 3, 4 + 4, over K chunks of kPairKChunk blocks so that the second register tile
// re-reads the pair's codes from L1. Every row is bit-identical to the tile (same integer
// block sums, same float steps in block order; a float store and reload is exact).
constexpr std::size_t kPairKChunk = 64;
// The pair's prefetch (pair_nb in q4_prefill_rows): a group pair reads groups g and g + 1 side
// by side, so the tile's "16 KB ahead in the same stream" lands, past a group's end, in the
// group the other stream is reading (short K: g + 1 only ~2.5 KB ahead of its reader) or in
// the wrong place; remapped, it lands at the same offset of the group two ahead, the one this
// stream reads next. bench_kernels --gemm-weights dram, 5 rows, 2 alternating rounds: 10-16 %
// faster on every E2B shape but the wide down (~3 %); 4 rows: down 15 % faster, gate/up and the
// per-layer projection ~7 % slower. RINGLM_PAIR_PF_REMAP=0 keeps the tile's addresses.
#ifndef RINGLM_PAIR_PF_REMAP
#define RINGLM_PAIR_PF_REMAP 1
#endif
// Which row counts the pair form takes (bench_kernels --only gemm --gemm-weights dram, 2
// threads, alternating with the previous dispatch, loaded host; BENCHMARKS.md "Verify step:
// group-pair form"): two planes 3..8 rows (3 rows 5-15 % faster than the small-M form; against
// the tile 4 rows 6-20 %, 5 rows 14-22 %, 6-7 rows 5-20 %, 8 rows 0-7 %); one plane 4..5
// (10-20 % faster), and since 2026-12-07 one plane 6..8 as well: after the tile's bias and
// code-load change (wt-prefill4) the pair form was 0-9 % faster at 8 rows one plane on every
// E2B shape (--gemm-weights dram, 2 threads, two rounds; BENCHMARKS.md "Prefill and int8
// batched decode: where the time goes"); at 16 rows the tile stays. Others run the small-M
// form or the tile.
// RINGLM_PAIR_FORM=0 in an A/B build of bench_kernels turns the pair form off.
#ifndef RINGLM_PAIR_FORM
#define RINGLM_PAIR_FORM 1
#endif
inline bool pair_form_takes(std::size_t rows, bool two_planes) {
  if (!RINGLM_PAIR_FORM) return false;
  return two_planes ? rows >= 3 && rows <= 8 : rows >= 4 && rows <= 8;
}
inline void q4_matmul_groups_vnni_pairs(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x,
                                        float* y, std::size_t ldy) {
  const std::size_t nb = w.blocks_per_row();
  const TilePackBlock* pk = tile_pack_of(x);
  const bool two = x.qs2 != nullptr;
  const int mt = static_cast<int>(x.rows);
  const std::size_t kchunk = prefill_register_rows(mt, 0) == mt ? nb : kPairKChunk;
  for (std::size_t g = g0; g < g1; g += 2) {
    const bool pair = g + 1 < g1;
    for (std::size_t b0 = 0; b0 < nb; b0 += kchunk) {
      const std::size_t b1 = b0 + kchunk < nb ? b0 + kchunk : nb;
      for (int r0 = 0; r0 < mt; r0 += prefill_register_rows(mt, r0)) {
        const int rows = prefill_register_rows(mt, r0);
        if (pair)
          q4_prefill_tile_n<2, kPrefillRows + 1>(rows, w, g, b0, b1, b0 != 0, two, pk, r0, 0, r0 == 0, y, ldy,
                                                 RINGLM_PAIR_PF_REMAP ? nb : 0);
        else
          q4_prefill_tile_n<1, kPrefillRows + 1>(rows, w, g, b0, b1, b0 != 0, two, pk, r0, 0, r0 == 0, y, ldy);
      }
    }
  }
}
