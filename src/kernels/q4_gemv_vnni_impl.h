// Internal: the decode GEMV (one activation row) of the AVX-512 VNNI path, included by
// q4_kernels_avx512_impl.h inside its anonymous namespace when RINGLM_AVX512_VNNI is set.
//
// Why a separate form from the tile (q4_group_rows_vnni with MT = 1): on the Zen 5 EPYC
// reference VM a zmm vpdpbusd issues once per cycle with a 4-cycle latency (measured:
// 0.9/cycle with 12 independent chains, 1.1 ns dependent), and the tile's single-row form
// has only one 8-deep chain per plane and block, so a block's dots took ~22 cycles instead
// of the 16 the two planes need. Here (tools/bench_kernels, docs/bench/decode.md):
//   * two groups (32 output rows) run side by side, sharing each activation broadcast;
//   * each block's dots are split into a low-nibble and a high-nibble chain per plane and
//     group (8 chains of depth 4 with two planes), so the dot port never waits on latency;
//   * the high nibbles are not shifted down: (c_hi << 4) x q sums to exactly 16 times the
//     wanted integer (|.| < 2^23), recovered with an arithmetic shift, so unpacking costs one
//     AND per nibble instead of shift + AND;
//   * software prefetch is non-temporal (_MM_HINT_NTA), kGemvPrefetchBytes ahead on the codes
//     and the same number of blocks ahead on the scales (once per 64-byte line). On the
//     Zen 5 VM (family 26) E2B decode ran +11-14 % (medians of 3, alternating in one sitting)
//     against the earlier L2 prefetch (T1, 16 KB ahead), which itself had beaten T0 at 4 KB
//     by 15-25 % on the family 25 VM (docs/bench/decode.md, "Zen 5 VM, 2026-12-07").
//     Why NTA should help (not measured directly: no hardware counters in the VM): every
//     weight byte is read once per token, and AMD's L3 is filled by L2 evictions, so lines
//     brought into L2 cost a victim write into L3 later; NTA lines are meant to skip that.
// The integer block sums are exact and the float steps per block are exactly those of
// q4_group_rows_vnni (cvt, x254 + plane 2, x scale, FMA with the activation scale into the
// running sum), so a row's result is bit-identical to the tile's: the batched forward
// (several rows) and the single-token forward agree bit for bit.

// Prefetch distance of the decode GEMV on the code stream (bytes ahead of the block read).
// RINGLM_GEMV_PREFETCH_BYTES overrides it for A/B builds of bench_kernels (not for products).
// With NTA, 2, 4 and 8 KB ran within noise of each other in E2B decode (Zen 5 VM); 4 KB x 4
// streams per core stays well inside a 32-48 KB L1D.
#ifdef RINGLM_GEMV_PREFETCH_BYTES
constexpr std::size_t kGemvPrefetchBytes = RINGLM_GEMV_PREFETCH_BYTES;
#else
constexpr std::size_t kGemvPrefetchBytes = 4096;
#endif

// The same distance in blocks on the fp16 scale stream (32 bytes a block against 256 of codes).
// Why: the code prefetch (kGemvPrefetchBytes past the block) reaches a group's scales only in
// its last kGemvPrefetchBytes of codes, so a pair's second group and every long-K group read their scales
// on demand for most of their blocks; perf annotate of E2B decode (Zen 5 VM) put ~19 % of the
// GEMV's samples just after the scale load. E2B decode A/B: +7-10 % when the host reads
// 55-59 GB/s, neutral when it is starved (docs/bench/decode.md, "Zen 5 VM, 2026-12-06").
constexpr std::size_t kGemvScalePrefetchBytes = kGemvPrefetchBytes / 8;

// Per-block integer sum of one group for one plane: low-nibble chain + (high chain >> 4).
inline __m512i gemv_combine(__m512i lo, __m512i hi16) { return _mm512_add_epi32(lo, _mm512_srai_epi32(hi16, 4)); }

// Float block value of one group (the same operations as q4_group_rows_vnni).
template <bool kTwoPlanes>
inline __m512 gemv_block_value(__m512i s1, __m512i s2) {
  if (kTwoPlanes) return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_set1_ps(254.0f), _mm512_cvtepi32_ps(s2));
  return _mm512_cvtepi32_ps(s1);
}

// kGroups (1 or 2) consecutive groups starting at g, all blocks, one activation row; writes
// the valid rows of each group to y (row stride irrelevant: one row).
template <int kGroups, bool kTwoPlanes>
inline void q4_gemv_groups_vnni(const Q4Packed& w, std::size_t g, const Q8ActView& x, float* y) {
  const __m512i lo_mask = _mm512_set1_epi8(0x0f);
  const __m512i hi_mask = _mm512_set1_epi8(static_cast<char>(0xf0));
  const std::size_t nb = w.blocks_per_row();
  const std::uint8_t* codes[kGroups];
  const std::uint16_t* scales[kGroups];
  __m512 acc[kGroups];
  for (int k = 0; k < kGroups; ++k) {
    codes[k] = w.group_codes(g + k);
    scales[k] = w.group_scales(g + k);
    acc[k] = _mm512_setzero_ps();
  }
  for (std::size_t b = 0; b < nb; ++b) {
    const std::int8_t* a1 = x.qs + b * 32;
    const std::int8_t* a2 = kTwoPlanes ? x.qs2 + b * 32 : nullptr;
    __m512i s1lo[kGroups], s1hi[kGroups], s2lo[kGroups], s2hi[kGroups];
    const __m512i bias1 = _mm512_set1_epi32(x.bias[b]);
    const __m512i bias2 = kTwoPlanes ? _mm512_set1_epi32(x.bias2[b]) : bias1;
#pragma GCC unroll 2
    for (int k = 0; k < kGroups; ++k) {
      const char* cb = reinterpret_cast<const char*>(codes[k] + b * 256);
      _mm_prefetch(cb + kGemvPrefetchBytes, _MM_HINT_NTA);
      _mm_prefetch(cb + kGemvPrefetchBytes + 64, _MM_HINT_NTA);
      _mm_prefetch(cb + kGemvPrefetchBytes + 128, _MM_HINT_NTA);
      _mm_prefetch(cb + kGemvPrefetchBytes + 192, _MM_HINT_NTA);
      // The group's scales sit after all its codes, so the code prefetch above reaches them
      // only near the group's end: give them their own stream, the same blocks ahead. A
      // block's scales are 32 bytes: every even block's address is 64 bytes past the last
      // one's, so prefetching on even blocks touches each line exactly once.
      if ((b & 1) == 0)
        _mm_prefetch(reinterpret_cast<const char*>(scales[k] + b * 16) + kGemvScalePrefetchBytes, _MM_HINT_NTA);
      s1lo[k] = bias1;
      s1hi[k] = _mm512_setzero_si512();
      if (kTwoPlanes) {
        s2lo[k] = bias2;
        s2hi[k] = _mm512_setzero_si512();
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
      const __m512i x1lo = bcast4(a1 + 4 * t), x1hi = bcast4(a1 + 16 + 4 * t);
      __m512i x2lo = x1lo, x2hi = x1hi;
      if (kTwoPlanes) {
        x2lo = bcast4(a2 + 4 * t);
        x2hi = bcast4(a2 + 16 + 4 * t);
      }
#pragma GCC unroll 2
      for (int k = 0; k < kGroups; ++k) {
        const __m512i raw = _mm512_loadu_si512(codes[k] + b * 256 + 64 * t);
        const __m512i lo = _mm512_and_si512(raw, lo_mask), hi = _mm512_and_si512(raw, hi_mask);
        s1lo[k] = _mm512_dpbusd_epi32(s1lo[k], lo, x1lo);
        s1hi[k] = _mm512_dpbusd_epi32(s1hi[k], hi, x1hi);
        if (kTwoPlanes) {
          s2lo[k] = _mm512_dpbusd_epi32(s2lo[k], lo, x2lo);
          s2hi[k] = _mm512_dpbusd_epi32(s2hi[k], hi, x2hi);
        }
      }
    }
    const __m512 xd = _mm512_set1_ps(kTwoPlanes ? x.d2[b] : x.d[b]);
#pragma GCC unroll 2
    for (int k = 0; k < kGroups; ++k) {
      const __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales[k] + b * 16)));
      const __m512i s1 = gemv_combine(s1lo[k], s1hi[k]);
      const __m512i s2 = kTwoPlanes ? gemv_combine(s2lo[k], s2hi[k]) : s1;
      acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(gemv_block_value<kTwoPlanes>(s1, s2), ws), xd, acc[k]);
    }
  }
  for (int k = 0; k < kGroups; ++k) {
    const std::size_t n0 = (g + k) * kQ4GroupRows;
    const std::size_t valid = w.rows - n0 < kQ4GroupRows ? w.rows - n0 : kQ4GroupRows;
    _mm512_mask_storeu_ps(y + n0, static_cast<__mmask16>((1u << valid) - 1u), acc[k]);
  }
}

// Groups [g0, g1) of a one-row product, two at a time.
template <bool kTwoPlanes>
inline void q4_gemv_vnni(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y) {
  std::size_t g = g0;
  for (; g + 2 <= g1; g += 2) q4_gemv_groups_vnni<2, kTwoPlanes>(w, g, x, y);
  if (g < g1) q4_gemv_groups_vnni<1, kTwoPlanes>(w, g, x, y);
}
