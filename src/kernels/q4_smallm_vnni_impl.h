// Internal: the small-M q4 product (2..3 activation rows: a speculative verify step, a small
// batched decode step) of the AVX-512 VNNI path, included by q4_kernels_avx512_impl.h inside
// its anonymous namespace after q4_tile_vnni_impl.h (it reads the tile's TilePackBlock).
//
// Why a third form (issue #33, docs/speculative.md "Findings"): a verify step of k+1 = 2..5
// rows cost 1.4-2.0 decode steps, and perf put ~65 % of its samples in the tile. With 2-4
// rows the tile has only 2 x M dot chains, each 8 deep per block, and the float epilogue
// waits on them: with a 4-cycle vpdpbusd the block is latency-bound, so the cores cannot keep
// the weight stream as busy as the GEMV does, although the integer work is only M times the
// GEMV's. This loop is the GEMV's (q4_gemv_vnni_impl.h) widened to M rows:
//   * each block's dots are split into a low-nibble and a high-nibble chain per row and
//     plane (2 x 2 x M chains of depth 4), and with 2 rows two groups run side by side
//     (16 chains), so the dot port never waits on latency;
//   * the high nibbles are masked in place, not shifted: (c_hi << 4) x q sums to exactly 16
//     times the wanted integer (|.| < 2^23), recovered with one arithmetic shift per block;
//   * the activation rows come from the caller's TilePackBlock (one pointer, constant
//     offsets: no row pointers to spill), each weight line is loaded once for all rows;
//   * non-temporal prefetch (NTA) on the code stream, kGemvPrefetchBytes (4 KB) ahead, as the
//     GEMV does: bench_kernels --only gemm --gemm-rows 2 --gemm-weights dram, 2 threads, two
//     rounds on the Zen 5 VM: 12-18 % less time a call than T1 16 KB on the K=1536 and
//     down shapes, level on the wide down (docs/bench/decode.md, "Zen 5 VM, 2026-12-07").
// The integer block sums are exact, the planes are combined in int32 as the tile does, and
// the float steps per block (cvt, x weight scale, FMA with the activation scale into the
// running sum, blocks in order from zero) are exactly the tile's and the GEMV's, so each row
// is bit-identical to the same row computed alone (tests Q4SmallM.*).

// Most activation rows this form takes; more go to the tile. With 4 rows the tile's 8 chains
// already keep the dot port busy (two planes: 64 vpdpbusd per group and block), and the
// bench (bench_kernels --only gemm --gemm-rows 2,3,4,5 --gemm-weights dram, 2 threads, two
// planes, loaded host) had this form 0-10 % slower there, against 12-22 % faster at 2 rows
// and ~5 % at 3; 4 rows and more run the tile. Since then the group-pair form
// (q4_prefill_vnni_impl.h, pair_form_takes) took 3 rows of two planes as well: this form now
// serves 2 rows, and 3 rows of one plane.
constexpr std::size_t kSmallMMaxRows = 3;

// kGroups consecutive groups from g, all blocks, the M packed rows of pk; writes the valid
// output rows of each group to y (row i of the activations at y + i * ldy).
template <int M, int kGroups, bool kTwoPlanes>
inline void q4_smallm_groups_vnni(const Q4Packed& w, std::size_t g, const TilePackBlock* pk, float* y,
                                  std::size_t ldy) {
  const __m512i lo_mask = _mm512_set1_epi8(0x0f);
  const __m512i hi_mask = _mm512_set1_epi8(static_cast<char>(0xf0));
  const std::size_t nb = w.blocks_per_row();
  const std::uint8_t* codes[kGroups];
  const std::uint16_t* scales[kGroups];
  __m512 acc[kGroups][M];
  for (int k = 0; k < kGroups; ++k) {
    codes[k] = w.group_codes(g + k);
    scales[k] = w.group_scales(g + k);
    for (int i = 0; i < M; ++i) acc[k][i] = _mm512_setzero_ps();
  }
  for (std::size_t b = 0; b < nb; ++b) {
    const TilePackBlock& p = pk[b];
    __m512i s1lo[kGroups][M], s1hi[kGroups][M], s2lo[kGroups][M], s2hi[kGroups][M];
#pragma GCC unroll 2
    for (int k = 0; k < kGroups; ++k) {
      const char* cb = reinterpret_cast<const char*>(codes[k] + b * 256);
      _mm_prefetch(cb + kGemvPrefetchBytes, _MM_HINT_NTA);
      _mm_prefetch(cb + kGemvPrefetchBytes + 64, _MM_HINT_NTA);
      _mm_prefetch(cb + kGemvPrefetchBytes + 128, _MM_HINT_NTA);
      _mm_prefetch(cb + kGemvPrefetchBytes + 192, _MM_HINT_NTA);
#pragma GCC unroll 4
      for (int i = 0; i < M; ++i) {
        s1lo[k][i] = _mm512_set1_epi32(p.bias1[i]);
        s1hi[k][i] = _mm512_setzero_si512();
        if (kTwoPlanes) {
          s2lo[k][i] = _mm512_set1_epi32(p.bias2[i]);
          s2hi[k][i] = _mm512_setzero_si512();
        }
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
#pragma GCC unroll 2
      for (int k = 0; k < kGroups; ++k) {
        const __m512i raw = _mm512_loadu_si512(codes[k] + b * 256 + 64 * t);
        const __m512i lo = _mm512_and_si512(raw, lo_mask), hi = _mm512_and_si512(raw, hi_mask);
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i) {
          s1lo[k][i] = dot4(s1lo[k][i], lo, p.q1[i] + 4 * t);
          s1hi[k][i] = dot4(s1hi[k][i], hi, p.q1[i] + 16 + 4 * t);
          if (kTwoPlanes) {
            s2lo[k][i] = dot4(s2lo[k][i], lo, p.q2[i] + 4 * t);
            s2hi[k][i] = dot4(s2hi[k][i], hi, p.q2[i] + 16 + 4 * t);
          }
        }
      }
    }
#pragma GCC unroll 2
    for (int k = 0; k < kGroups; ++k) {
      const __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales[k] + b * 16)));
#pragma GCC unroll 4
      for (int i = 0; i < M; ++i) {
        const __m512i s1 = _mm512_add_epi32(s1lo[k][i], _mm512_srai_epi32(s1hi[k][i], 4));
        __m512i s = s1;
        if (kTwoPlanes) s = tile_combine_planes(s1, _mm512_add_epi32(s2lo[k][i], _mm512_srai_epi32(s2hi[k][i], 4)));
        acc[k][i] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s), ws), _mm512_set1_ps(p.xd[i]), acc[k][i]);
      }
    }
  }
  for (int k = 0; k < kGroups; ++k) {
    const std::size_t n0 = (g + k) * kQ4GroupRows;
    const std::size_t valid = w.rows - n0 < kQ4GroupRows ? w.rows - n0 : kQ4GroupRows;
    const __mmask16 keep = static_cast<__mmask16>((1u << valid) - 1u);
    for (int i = 0; i < M; ++i) _mm512_mask_storeu_ps(y + static_cast<std::size_t>(i) * ldy + n0, keep, acc[k][i]);
  }
}

// Groups [g0, g1) for M rows: two groups at a time where their chains and accumulators stay
// within 20 of the 32 zmm (2 rows of two planes, up to 3 of one; GCC spilled one-plane
// 4-row pairs inside the loop), else one.
template <int M, bool kTwoPlanes>
inline void q4_smallm_vnni_m(const Q4Packed& w, std::size_t g0, std::size_t g1, const TilePackBlock* pk, float* y,
                             std::size_t ldy) {
  constexpr int kChainsPerGroup = (kTwoPlanes ? 4 : 2) * M;
  constexpr int kPair = 2 * (kChainsPerGroup + M) <= 20 ? 2 : 1;
  std::size_t g = g0;
  if constexpr (kPair == 2)
    for (; g + 2 <= g1; g += 2) q4_smallm_groups_vnni<M, 2, kTwoPlanes>(w, g, pk, y, ldy);
  for (; g < g1; ++g) q4_smallm_groups_vnni<M, 1, kTwoPlanes>(w, g, pk, y, ldy);
}

template <bool kTwoPlanes>
inline void q4_smallm_vnni_planes(const Q4Packed& w, std::size_t g0, std::size_t g1, std::size_t rows,
                                  const TilePackBlock* pk, float* y, std::size_t ldy) {
  switch (rows) {
    case 2: return q4_smallm_vnni_m<2, kTwoPlanes>(w, g0, g1, pk, y, ldy);
    default: return q4_smallm_vnni_m<3, kTwoPlanes>(w, g0, g1, pk, y, ldy);
  }
}

// Groups [g0, g1) times all x.rows (2..kSmallMMaxRows) activation rows.
inline void q4_matmul_groups_vnni_smallm(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x,
                                         float* y, std::size_t ldy) {
  const TilePackBlock* pack = tile_pack_of(x);
  if (x.qs2 != nullptr) q4_smallm_vnni_planes<true>(w, g0, g1, x.rows, pack, y, ldy);
  else q4_smallm_vnni_planes<false>(w, g0, g1, x.rows, pack, y, ldy);
}
