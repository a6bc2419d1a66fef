// Internal: the multi-row tile (2..64+ activation rows: the batched decode step, prefill)
// of the AVX-512 VNNI path, included by q4_kernels_avx512_impl.h inside its anonymous
// namespace when RINGLM_AVX512_VNNI is set.
//
// Why this form (tools/bench_kernels --only gemm --gemm-rows, docs/bench/kernels.md):
//   * The activation rows of a tile are first interleaved per block into a small per-thread
//     buffer (TilePack: both planes' 32 bytes of every row, then the rows' biases and scales),
//     so the loop addresses every row's bytes from one pointer with constant offsets. Read in
//     place, eight rows x two planes need 16 row pointers (x86-64 has 16 general registers);
//     GCC spilled them and recomputed addresses for every dot.
//   * Per block the four code lines are unpacked one at a time (low nibbles, then high), each
//     used by all rows and planes before the next is made. Unpacking all eight vectors first
//     (the old order) kept 8 code + 16 integer chains + 8 float accumulators = 32 zmm live,
//     and the compiler spilled inside the dot loop.
//   * 2 x MT independent vpdpbusd chains (8 deep per block) hide the dot latency for MT >= 2.
// The integer block sums are exact and the float steps per block give exactly the values of
// the decode GEMV (q4_gemv_vnni_impl.h): x254 + plane 2 (here in int32, there in float: both
// exact), x weight scale, FMA with the activation scale into the running sum. So every row of a tile is bit-identical to the same
// row computed alone, which the batched forward's equality with the single-sequence forward
// relies on (test Q4Matmul.OneRowIsBitIdenticalToThatRowOfATile).

// Prefetch on the code stream (bytes ahead, cache level): a batched decode step streams the
// weights from DRAM like the GEMV, so the tile prefetches as far ahead as it does.
#ifndef RINGLM_TILE_PREFETCH_BYTES
#define RINGLM_TILE_PREFETCH_BYTES 16384
#define RINGLM_TILE_PREFETCH_HINT _MM_HINT_T1
#endif
constexpr std::size_t kTilePrefetchBytes = RINGLM_TILE_PREFETCH_BYTES;

// Rows per tile: 2 x 8 chains + 8 float accumulators + line, mask, scales fit the 32 zmm.
constexpr int kVnniTileRows = 8;

// One block of a packed tile: plane-1 bytes of rows 0..7, plane-2 bytes, then int32 biases
// of both planes and the float activation scale per row (d2 with two planes, else d).
struct TilePackBlock {
  std::int8_t q1[kVnniTileRows][32];
  std::int8_t q2[kVnniTileRows][32];
  std::int32_t bias1[kVnniTileRows];
  std::int32_t bias2[kVnniTileRows];
  float xd[kVnniTileRows];
  // Two planes: 254 * bias1 + bias2, the bias of the combined block sum (tile_combine_planes
  // is linear, so starting plane 2's chain here and plane 1's at zero gives the same int32 as
  // starting each at its own bias: one broadcast load per row and block instead of two).
  // One plane: bias1. Also pads the block to 640 bytes (64-byte aligned).
  std::int32_t bias12[kVnniTileRows];
};
static_assert(sizeof(TilePackBlock) == 640, "TilePackBlock layout");

// Activation rows [m0, m0 + mt) (mt <= 8), blocks [0, nb), interleaved into out[nb].
inline void tile_pack(const Q8ActView& x, std::size_t m0, int mt, TilePackBlock* out) {
  const std::size_t nb = x.cols / 32;
  const bool two = x.qs2 != nullptr;
  for (std::size_t b = 0; b < nb; ++b) {
    TilePackBlock& p = out[b];
    for (int i = 0; i < mt; ++i) {
      const std::size_t m = m0 + static_cast<std::size_t>(i), xb = m * nb + b;
      std::memcpy(p.q1[i], x.qs + m * x.cols + b * 32, 32);
      p.bias1[i] = x.bias[xb];
      if (two) {
        std::memcpy(p.q2[i], x.qs2 + m * x.cols + b * 32, 32);
        p.bias2[i] = x.bias2[xb];
        p.xd[i] = x.d2[xb];
        p.bias12[i] = 254 * x.bias[xb] + x.bias2[xb];
      } else {
        p.xd[i] = x.d[xb];
        p.bias12[i] = x.bias[xb];
      }
    }
  }
}

// 254 * s1 + s2 in int32, as (s1 << 8) - (s1 << 1) + s2. Exact: |s| <= 32 * 8 * 127 per plane,
// so the sum is below 2^24 and its conversion to float equals the GEMV's float form
// fma(cvt(s1), 254, cvt(s2)) bit for bit. Why integers: on Zen 5 the FMA and multiply share
// the two pipes that issue vpdpbusd (tools/bench_dot_ports: 12 dots + 3 FMA take 7.8 cycles,
// 12 dots + 2 shifts + 1 AND 6.4), so the tile's dot-bound loop loses an FMA per row and block
// to shifts and adds that issue beside the dots.
inline __m512i tile_combine_planes(__m512i s1, __m512i s2) {
  const __m512i s254 = _mm512_sub_epi32(_mm512_slli_epi32(s1, 8), _mm512_slli_epi32(s1, 1));
  return _mm512_add_epi32(s254, s2);
}

inline __m512i dot4(__m512i acc, __m512i codes, const std::int8_t* a) {
  return _mm512_dpbusd_epi32(acc, codes, bcast4(a));
}

// acc[i] (16 rows of the group) += W_group[:, blocks b0..b1) . packed row i, for MT rows.
template <int MT, bool kTwoPlanes>
inline void q4_group_rows_vnni(const std::uint8_t* codes, const std::uint16_t* scales, std::size_t b0,
                               std::size_t b1, const TilePackBlock* pk, __m512 acc[MT]) {
  const __m512i mask = _mm512_set1_epi8(0x0f);
  for (std::size_t b = b0; b < b1; ++b) {
    const std::uint8_t* cb = codes + b * 256;
    const TilePackBlock& p = pk[b];
    _mm_prefetch(reinterpret_cast<const char*>(cb + kTilePrefetchBytes), RINGLM_TILE_PREFETCH_HINT);
    _mm_prefetch(reinterpret_cast<const char*>(cb + kTilePrefetchBytes + 64), RINGLM_TILE_PREFETCH_HINT);
    _mm_prefetch(reinterpret_cast<const char*>(cb + kTilePrefetchBytes + 128), RINGLM_TILE_PREFETCH_HINT);
    _mm_prefetch(reinterpret_cast<const char*>(cb + kTilePrefetchBytes + 192), RINGLM_TILE_PREFETCH_HINT);
    __m512i s1[MT], s2[MT];
#pragma GCC unroll 8
    for (int i = 0; i < MT; ++i) {
      if (kTwoPlanes) {
        s1[i] = _mm512_setzero_si512();
        s2[i] = _mm512_set1_epi32(p.bias12[i]);
      } else {
        s1[i] = _mm512_set1_epi32(p.bias1[i]);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
      __m512i raw = _mm512_loadu_si512(cb + 64 * t);
      // One load of the line, held in a register: GCC otherwise folds the load into both the
      // AND and the shift (two loads; the loop is bound by this CPU's two loads a cycle).
      __asm__("" : "+v"(raw));
      const __m512i lo = _mm512_and_si512(raw, mask);  // elements 4t..4t+3 of each row
#pragma GCC unroll 8
      for (int i = 0; i < MT; ++i) {
        s1[i] = dot4(s1[i], lo, p.q1[i] + 4 * t);
        if (kTwoPlanes) s2[i] = dot4(s2[i], lo, p.q2[i] + 4 * t);
      }
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask);  // 16+4t..16+4t+3
#pragma GCC unroll 8
      for (int i = 0; i < MT; ++i) {
        s1[i] = dot4(s1[i], hi, p.q1[i] + 16 + 4 * t);
        if (kTwoPlanes) s2[i] = dot4(s2[i], hi, p.q2[i] + 16 + 4 * t);
      }
    }
    const __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + b * 16)));
#pragma GCC unroll 8
    for (int i = 0; i < MT; ++i) {
      const __m512 f = _mm512_cvtepi32_ps(kTwoPlanes ? tile_combine_planes(s1[i], s2[i]) : s1[i]);
      acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(f, ws), _mm512_set1_ps(p.xd[i]), acc[i]);
    }
  }
}

// Output rows of group g for the MT packed rows of pk (activation rows m0..), blocks
// [b0, b1); adds to what y holds when `accumulate` (later K chunks), else overwrites it.
template <int MT>
inline void q4_group_tile_vnni(const Q4Packed& w, std::size_t g, std::size_t b0, std::size_t b1, bool accumulate,
                               bool two_planes, const TilePackBlock* pk, std::size_t m0, float* y, std::size_t ldy) {
  const std::size_t n0 = g * kQ4GroupRows;
  const std::size_t valid = w.rows - n0 < kQ4GroupRows ? w.rows - n0 : kQ4GroupRows;
  const __mmask16 keep = static_cast<__mmask16>((1u << valid) - 1u);
  __m512 acc[MT];
  for (int i = 0; i < MT; ++i)
    acc[i] = accumulate ? _mm512_maskz_loadu_ps(keep, y + (m0 + i) * ldy + n0) : _mm512_setzero_ps();
  if (two_planes) q4_group_rows_vnni<MT, true>(w.group_codes(g), w.group_scales(g), b0, b1, pk, acc);
  else q4_group_rows_vnni<MT, false>(w.group_codes(g), w.group_scales(g), b0, b1, pk, acc);
  for (int i = 0; i < MT; ++i) _mm512_mask_storeu_ps(y + (m0 + i) * ldy + n0, keep, acc[i]);
}

// A tile of exactly `rows` (1..8) packed rows.
template <int MT>
inline void q4_group_tile_vnni_n(int rows, const Q4Packed& w, std::size_t g, std::size_t b0, std::size_t b1,
                                 bool accumulate, bool two_planes, const TilePackBlock* pk, std::size_t m0, float* y,
                                 std::size_t ldy) {
  if (rows == MT) return q4_group_tile_vnni<MT>(w, g, b0, b1, accumulate, two_planes, pk, m0, y, ldy);
  if constexpr (MT > 1) q4_group_tile_vnni_n<MT - 1>(rows, w, g, b0, b1, accumulate, two_planes, pk, m0, y, ldy);
}

// All rows of x, tile after tile (tile t at blocks [t * nb, (t + 1) * nb)), into `pack`
// (per thread, grown once to the largest rows x cols seen: no allocation per call after).
// With a pool (prefill) the tiles are split over its threads; each tile is written by one
// thread with the same bytes as the serial loop.
inline const TilePackBlock* tile_pack_all(const Q8ActView& x, std::vector<TilePackBlock>& pack,
                                          ThreadPool* pool = nullptr) {
  const std::size_t nb = x.cols / 32;
  const std::size_t tiles = (x.rows + kVnniTileRows - 1) / kVnniTileRows;
  if (pack.size() < tiles * nb) pack.resize(tiles * nb);
  TilePackBlock* out = pack.data();
  auto run = [&](std::size_t t0, std::size_t t1, std::size_t) {
    for (std::size_t t = t0; t < t1; ++t) {
      const std::size_t m0 = t * kVnniTileRows;
      const int mt = static_cast<int>(x.rows - m0 < kVnniTileRows ? x.rows - m0 : kVnniTileRows);
      tile_pack(x, m0, mt, out + t * nb);
    }
  };
  // Two tiles or fewer (a batched decode step) cost less than the pool's hand-off.
  if (pool != nullptr && pool->size() > 1 && tiles > 2) pool->parallel_for(tiles, std::move(run));
  else run(0, tiles, 0);
  return out;
}

// KernelTable::prepack_act: packed once before the pool call (by the pool's threads when
// given one), read by every share.
inline const void* prepack_vnni_tiles(const Q8ActView& x, ThreadPool* pool) {
  thread_local std::vector<TilePackBlock> caller_pack;
  return x.rows >= 2 ? tile_pack_all(x, caller_pack, pool) : nullptr;
}

// The activations' tile packing every multi-row form reads: the caller's, packed once before
// the pool call (prepack_vnni_tiles), else packed here into this thread's own buffer (callers
// that did not pre-pack: tests, benches). Valid until this thread's next call.
inline const TilePackBlock* tile_pack_of(const Q8ActView& x) {
  thread_local std::vector<TilePackBlock> own_pack;
  return x.tile_pack != nullptr ? static_cast<const TilePackBlock*>(x.tile_pack) : tile_pack_all(x, own_pack);
}

// Groups [g0, g1) times all x.rows (>= 2) activation rows.
inline void q4_matmul_groups_vnni_tiles(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x,
                                        float* y, std::size_t ldy) {
  const std::size_t nb = w.blocks_per_row();
  const std::size_t tiles = (x.rows + kVnniTileRows - 1) / kVnniTileRows;
  const TilePackBlock* pack = tile_pack_of(x);
  // With several tiles, a group's weights are re-read once per tile: cut K into chunks of
  // 64 blocks (18 KB of weights) so that re-read hits L1 even for K = 12288.
  const std::size_t kchunk = tiles > 1 ? 64 : nb;
  const bool two = x.qs2 != nullptr;
  for (std::size_t g = g0; g < g1; ++g) {
    for (std::size_t b0 = 0; b0 < nb; b0 += kchunk) {
      const std::size_t b1 = b0 + kchunk < nb ? b0 + kchunk : nb;
      for (std::size_t t = 0; t < tiles; ++t) {
        const std::size_t m0 = t * kVnniTileRows;
        const int mt = static_cast<int>(x.rows - m0 < kVnniTileRows ? x.rows - m0 : kVnniTileRows);
        q4_group_tile_vnni_n<kVnniTileRows>(mt, w, g, b0, b1, b0 != 0, two, pack + t * nb, m0, y, ldy);
      }
    }
  }
}
