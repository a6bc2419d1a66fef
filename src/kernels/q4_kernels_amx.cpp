// AMX path (Sapphire Rapids and later Xeons): the q4 GEMM with 10 or more activation rows
// (a large batched decode step, a prefill chunk) on the tile unit; everything else,
// including the one-row decode GEMV and small batches, is the AVX-512 VNNI path's code.
//
// One TDPBSSD multiplies an activation tile A [m rows][32 int8] (one q4_0 block of m rows)
// by a weight tile B [8][64]: row k of B holds, for each of 16 output rows n, the 4 signed
// weights (c - 8) of elements 4k..4k+3. That is exactly one 64-byte line of the q4p16 layout
// after unpacking: line t's low nibbles are elements 4t..4t+3 (B row t), its high nibbles
// elements 16+4t..16+4t+3 (B row 4+t). So a block is unpacked once (4 loads, AND/shift,
// subtract 8, 8 stores) and one instruction computes the block's integer sums for 16 output
// rows x all m activation rows, 8192 multiply-adds, where the VNNI tile needs 8 vpdpbusd per
// row and plane. The integer sums equal the VNNI path's bias + sum(c * q) exactly
// (sum((c - 8) * q) = sum(c * q) - 8 * sum(q)), and each block's float steps are those of
// q4_gemv_vnni_impl.h (cvt, x254 + plane 2, x weight scale, FMA with the activation scale
// into the running sum, block by block), so every row is bit-identical to the VNNI GEMV
// and tile: the batched forward still equals each sequence run alone.
//
// Tiles: two groups (32 output rows) per pass share the activation tiles:
//   0, 1: A plane 1 / plane 2 (m rows x 32 bytes, read in place with the row stride)
//   2, 3: B of group g / g + 1 (8 rows x 64 bytes, from a per-thread unpack buffer)
//   4..7: C [m rows x 16 int32] of (plane 1, g), (plane 2, g), (plane 1, g+1), (plane 2, g+1)
// More than 16 activation rows run as tiles of 16; the last one is shifted back to end at
// the last row (it recomputes a few rows and stores the same bits again).
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "kernels/cpu_features.h"
#include "kernels/kernel_table.h"

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"  // the same false positive, in _mm512_cvtph_ps
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,amx-tile,amx-int8")
#include <immintrin.h>

namespace ringlm::kernels {
namespace {

// Same prefetch distance on the code stream as the VNNI tile (q4_kernels_avx512_impl.h).
constexpr std::size_t kAmxPrefetchBytes = 4096;
constexpr int kAmxRows = 16;  // activation rows per tile (the hardware maximum)
// Below this many activation rows the VNNI tile is as fast or faster: one pass of the tile
// unit per block has a fixed cost (tile loads, TDPBSSD, tile stores of the sums, then the
// float steps from memory) that only enough rows amortise. Measured (scratch bench, 6144 x
// 1536, 2 threads, two planes, weights from DRAM, ms per call): VNNI / AMX 0.32 / 0.34 at
// 8 rows, 0.58 / 0.45 at 16, 2.10 / 1.67 at 64. Without the float steps the AMX loop takes
// two thirds of that time (0.27 of 0.40 ms at 16 rows, weights in cache): the tile stores
// of the integer sums and the unit's latency, which reordering the loop did not hide.
constexpr std::size_t kAmxMinRows = 10;

// GCC 12's _tile_loadd is an asm statement without a memory clobber, so the compiler may sink
// (or drop as dead) the vector stores of the unpack buffer that the tile load reads. This one
// tells it the load reads memory.
#define RINGLM_TILE_LOADD(tile, base, stride)                                        \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #tile ::"r"(static_cast<const void*>(base)), \
                   "r"(static_cast<long>(stride))                                     \
                   : "memory")

struct alignas(64) TileConfig {
  std::uint8_t palette_id;
  std::uint8_t start_row;
  std::uint8_t reserved[14];
  std::uint16_t colsb[16];
  std::uint8_t rows[16];
};

void configure_tiles(int m) {
  TileConfig c;
  std::memset(&c, 0, sizeof c);
  c.palette_id = 1;
  for (int t = 0; t < 2; ++t) {  // A planes
    c.rows[t] = static_cast<std::uint8_t>(m);
    c.colsb[t] = 32;
  }
  for (int t = 2; t < 4; ++t) {  // B of two groups
    c.rows[t] = 8;
    c.colsb[t] = 64;
  }
  for (int t = 4; t < 8; ++t) {  // C
    c.rows[t] = static_cast<std::uint8_t>(m);
    c.colsb[t] = 64;
  }
  _tile_loadconfig(&c);
}

// Block b of a group as a B tile: 8 rows of 64 signed bytes (c - 8).
inline void unpack_block(const std::uint8_t* cb, std::int8_t* out) {
  const __m512i mask = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
  _mm_prefetch(reinterpret_cast<const char*>(cb + kAmxPrefetchBytes), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(cb + kAmxPrefetchBytes + 64), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(cb + kAmxPrefetchBytes + 128), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(cb + kAmxPrefetchBytes + 192), _MM_HINT_T0);
  for (int t = 0; t < 4; ++t) {
    const __m512i raw = _mm512_loadu_si512(cb + 64 * t);
    _mm512_store_si512(out + 64 * t, _mm512_sub_epi8(_mm512_and_si512(raw, mask), eight));
    _mm512_store_si512(out + 256 + 64 * t, _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(raw, 4), mask), eight));
  }
}

// acc[i] = fma(value_i * ws, xd_i, acc[i]) for the m rows of one group and block: the float
// steps of the VNNI GEMV, from the block's integer sums c1 (and c2 with two planes).
template <bool kTwoPlanes>
inline void accumulate_block(const std::int32_t (*c1)[16], const std::int32_t (*c2)[16], const std::uint16_t* scales,
                             const float* xd, std::size_t xd_stride, int m, float (*acc)[16]) {
  const __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
  for (int i = 0; i < m; ++i) {
    const __m512 s1 = _mm512_cvtepi32_ps(_mm512_load_si512(c1[i]));
    const __m512 f = kTwoPlanes ? _mm512_fmadd_ps(s1, _mm512_set1_ps(254.0f), _mm512_cvtepi32_ps(_mm512_load_si512(c2[i])))
                                : s1;
    const __m512 a = _mm512_fmadd_ps(_mm512_mul_ps(f, ws), _mm512_set1_ps(xd[i * xd_stride]), _mm512_load_ps(acc[i]));
    _mm512_store_ps(acc[i], a);
  }
}

// Rows [m0, m0 + m) of x times groups g and g + 1 (kGroups = 2) or g alone (1), all blocks;
// writes the valid output rows to y.
template <int kGroups, bool kTwoPlanes>
void amx_groups(const Q4Packed& w, std::size_t g, const Q8ActView& x, std::size_t m0, int m, float* y,
                std::size_t ldy) {
  alignas(64) std::int8_t bt[kGroups][512];
  alignas(64) std::int32_t c[kGroups][2][kAmxRows][16];
  alignas(64) float acc[kGroups][kAmxRows][16];
  std::memset(acc, 0, sizeof acc);
  const std::size_t nb = w.blocks_per_row(), cols = x.cols;
  const std::uint8_t* codes0 = w.group_codes(g);
  const std::uint8_t* codes1 = kGroups == 2 ? w.group_codes(g + 1) : codes0;
  const std::uint16_t* scales0 = w.group_scales(g);
  const std::uint16_t* scales1 = kGroups == 2 ? w.group_scales(g + 1) : scales0;
  const float* xd = (kTwoPlanes ? x.d2 : x.d) + m0 * nb;
  for (std::size_t b = 0; b < nb; ++b) {
    unpack_block(codes0 + b * 256, bt[0]);
    if (kGroups == 2) unpack_block(codes1 + b * 256, bt[kGroups - 1]);
    RINGLM_TILE_LOADD(0, x.qs + m0 * cols + b * 32, cols);
    if (kTwoPlanes) RINGLM_TILE_LOADD(1, x.qs2 + m0 * cols + b * 32, cols);
    RINGLM_TILE_LOADD(2, bt[0], 64);
    _tile_zero(4);
    _tile_dpbssd(4, 0, 2);
    if (kTwoPlanes) {
      _tile_zero(5);
      _tile_dpbssd(5, 1, 2);
    }
    if (kGroups == 2) {
      RINGLM_TILE_LOADD(3, bt[kGroups - 1], 64);
      _tile_zero(6);
      _tile_dpbssd(6, 0, 3);
      if (kTwoPlanes) {
        _tile_zero(7);
        _tile_dpbssd(7, 1, 3);
      }
    }
    _tile_stored(4, c[0][0], 64);
    if (kTwoPlanes) _tile_stored(5, c[0][1], 64);
    if (kGroups == 2) {
      _tile_stored(6, c[kGroups - 1][0], 64);
      if (kTwoPlanes) _tile_stored(7, c[kGroups - 1][1], 64);
    }
    accumulate_block<kTwoPlanes>(c[0][0], c[0][1], scales0 + b * 16, xd + b, nb, m, acc[0]);
    if (kGroups == 2) accumulate_block<kTwoPlanes>(c[1][0], c[1][1], scales1 + b * 16, xd + b, nb, m, acc[1]);
  }
  for (int k = 0; k < kGroups; ++k) {
    const std::size_t n0 = (g + k) * kQ4GroupRows;
    const std::size_t valid = w.rows - n0 < kQ4GroupRows ? w.rows - n0 : kQ4GroupRows;
    const __mmask16 keep = static_cast<__mmask16>((1u << valid) - 1u);
    for (int i = 0; i < m; ++i) _mm512_mask_storeu_ps(y + (m0 + i) * ldy + n0, keep, _mm512_load_ps(acc[k][i]));
  }
}

template <bool kTwoPlanes>
void amx_matmul(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y, std::size_t ldy) {
  const int m = x.rows < static_cast<std::size_t>(kAmxRows) ? static_cast<int>(x.rows) : kAmxRows;
  configure_tiles(m);
  std::size_t g = g0;
  for (; g + 2 <= g1; g += 2)
    for (std::size_t m0 = 0; m0 < x.rows; m0 += kAmxRows)
      amx_groups<2, kTwoPlanes>(w, g, x, m0 + kAmxRows > x.rows ? x.rows - m : m0, m, y, ldy);
  if (g < g1)
    for (std::size_t m0 = 0; m0 < x.rows; m0 += kAmxRows)
      amx_groups<1, kTwoPlanes>(w, g, x, m0 + kAmxRows > x.rows ? x.rows - m : m0, m, y, ldy);
  _tile_release();  // no tile state kept between calls (context switches stay cheap)
}

void q4_matmul_groups_amx(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                          std::size_t ldy) {
  // One row (the decode GEMV) and small batches: the AVX-512 VNNI kernels, same bits.
  if (x.rows < kAmxMinRows || g0 >= g1) return q4_matmul_groups_avx512vnni(w, g0, g1, x, y, ldy);
  if (x.qs2 != nullptr) amx_matmul<true>(w, g0, g1, x, y, ldy);
  else amx_matmul<false>(w, g0, g1, x, y, ldy);
}

// Below kAmxMinRows rows the VNNI tile runs, and reads the caller's packed rows.
const void* prepack_act_amx(const Q8ActView& x, ThreadPool* pool) {
  return x.rows < kAmxMinRows ? prepack_act_avx512vnni(x, pool) : nullptr;
}

}  // namespace

bool amx_os_ready() {
#if defined(__linux__)
  static const bool ready = [] {
    if (!cpu_features().amx_int8 || !cpu_features().avx512vnni) return false;
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ready;
#else
  return false;
#endif
}

const KernelTable kAmxKernels = {
    quantize_act_row_avx512vnni,
    q4_matmul_groups_amx,
    i8_gemv_f32_avx512vnni,
    i8_gemv_q8_avx512vnni,
    gelu_mul_avx512,
    soft_cap_avx512,
    prepack_act_amx,
};

}  // namespace ringlm::kernels

#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
