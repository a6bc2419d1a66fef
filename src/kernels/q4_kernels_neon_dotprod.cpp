// aarch64 kernels with the ARMv8.2 dot-product extension (FEAT_DotProd: sdot, vdotq_s32),
// which every Apple M-series chip and recent ARM server core (Neoverse N1/V1/N2/V2, Graviton
// 2+, Ampere Altra) has. Only this file is compiled for it (the pragma below); dispatch.cpp
// picks it when cpu_features() reports neon_dotprod, so the rest stays baseline ARMv8.0.
//
// q4 x q8 step (q4p16 layout, q4_packed.h): 16 bytes of a 64-byte code line are 4 rows x
// 4 bytes ("quad" h = rows 4h..4h+3). With the activation's 16 bytes in one register,
// vdotq_laneq_s32(s, codes, a, t) adds to int32 lane r the 4-byte dot of row r's codes with
// activation bytes 4t..4t+3: 16 MACs per instruction, 8 per block and quad, no widening
// or pairwise adds (the ARMv8.0 kernel needs ~5 vector ops for the same 16 MACs).
// The codes are used unsigned (c, 0..15, fine as signed int8) and each chain starts at the
// activation block's bias = -8 * sum(q) (q8_act.h), so sum = sum((c - 8) q) exactly and only
// two ops unpack 16 bytes (and, shift) instead of four.
//
// Numerics: the same exact int32 block sums as every path, and the same float steps as the
// ARMv8.0 NEON kernel (acc = fma(acc, float(s) * w_scale, x_scale) per block, in block
// order; two planes combined as 254 * s1 + s2 in int32), so results are bit-identical to the
// neon path (tests/kernels/cross/neon_check.cpp checks it).
#include <cstring>

#include "kernels/kernel_table.h"

#if defined(__aarch64__)
#if defined(__clang__)
// Clang: the build gives this file -march=armv8.2-a+dotprod (src/CMakeLists.txt); Apple
// clang targets apple-m1 by default, which has it.
#elif defined(__GNUC__)
// GCC 12 declares the dot-product intrinsics under "arch=armv8.2-a+dotprod"; a bare
// "+dotprod" does not satisfy their target check. FEAT_DotProd implies Armv8.2.
#pragma GCC target("arch=armv8.2-a+dotprod")
#endif
#include <arm_neon.h>

namespace {

using namespace ringlm::kernels;

// Activation rows sharing one load + unpack of a quad's codes. Register budget (32 q-regs):
// 8 code vectors + MT float accumulators + MT int32 chains (2*MT with two planes) + the
// activation registers in flight. Not timed (no ARM hardware here): chosen from GCC 12 -O2
// output. With 4 rows the block loop has no stack traffic (one plane: 84 instructions per
// 32 sdot; two planes: 156 per 64); with 6 or 8 rows GCC stores the accumulators to the
// stack every block and the loop needs more instructions per sdot (2.9 at 6, 2.75 at 8).
constexpr std::size_t kTileRows = 4;
// Blocks per K chunk: a group's chunk of codes (64 * 288 B = 18 KB) stays in L1 while the
// four quads and all activation tiles re-read it.
constexpr std::size_t kChunkBlocks = 64;

// acc[i] (rows 4h..4h+3 of the group) += W[quad, blocks b0..b1) . x row (m0 + i).
template <int MT, bool kTwoPlanes>
inline void q4_quad_rows(const std::uint8_t* codes, const std::uint16_t* scales, std::size_t h, std::size_t b0,
                         std::size_t b1, const Q8ActView& x, std::size_t m0, float32x4_t acc_io[MT]) {
  const uint8x16_t mask = vdupq_n_u8(0x0f);
  const std::size_t nbx = x.cols / 32;
  // A local copy: working on the caller's array, GCC 12 stored every accumulator back after
  // each block.
  float32x4_t acc[MT];
  for (int i = 0; i < MT; ++i) acc[i] = acc_io[i];
  for (std::size_t b = b0; b < b1; ++b) {
    const std::uint8_t* cb = codes + b * 256 + 16 * h;
    int8x16_t lo[4], hi[4];  // lo[t]: elements 4t..4t+3 of the quad's rows; hi[t]: 16+4t..
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
      const uint8x16_t c = vld1q_u8(cb + 64 * t);
      lo[t] = vreinterpretq_s8_u8(vandq_u8(c, mask));
      hi[t] = vreinterpretq_s8_u8(vshrq_n_u8(c, 4));
    }
    const float32x4_t ws = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(scales + b * kQ4GroupRows + 4 * h)));
#pragma GCC unroll 8
    for (int i = 0; i < MT; ++i) {
      const std::size_t xb = (m0 + i) * nbx + b;
      const std::int8_t* a = x.qs + (m0 + i) * x.cols + b * 32;
      const int8x16_t al = vld1q_s8(a), ah = vld1q_s8(a + 16);
      int32x4_t s = vld1q_dup_s32(x.bias + xb);
      s = vdotq_laneq_s32(s, lo[0], al, 0);
      s = vdotq_laneq_s32(s, lo[1], al, 1);
      s = vdotq_laneq_s32(s, lo[2], al, 2);
      s = vdotq_laneq_s32(s, lo[3], al, 3);
      s = vdotq_laneq_s32(s, hi[0], ah, 0);
      s = vdotq_laneq_s32(s, hi[1], ah, 1);
      s = vdotq_laneq_s32(s, hi[2], ah, 2);
      s = vdotq_laneq_s32(s, hi[3], ah, 3);
      float xd;
      if constexpr (kTwoPlanes) {  // 254 * plane 1 + plane 2, scale d2 (as the neon path)
        const std::int8_t* a2 = x.qs2 + (m0 + i) * x.cols + b * 32;
        const int8x16_t bl = vld1q_s8(a2), bh = vld1q_s8(a2 + 16);
        int32x4_t s2 = vld1q_dup_s32(x.bias2 + xb);
        s2 = vdotq_laneq_s32(s2, lo[0], bl, 0);
        s2 = vdotq_laneq_s32(s2, lo[1], bl, 1);
        s2 = vdotq_laneq_s32(s2, lo[2], bl, 2);
        s2 = vdotq_laneq_s32(s2, lo[3], bl, 3);
        s2 = vdotq_laneq_s32(s2, hi[0], bh, 0);
        s2 = vdotq_laneq_s32(s2, hi[1], bh, 1);
        s2 = vdotq_laneq_s32(s2, hi[2], bh, 2);
        s2 = vdotq_laneq_s32(s2, hi[3], bh, 3);
        s = vmlaq_n_s32(s2, s, 254);
        xd = x.d2[xb];
      } else {
        xd = x.d[xb];
      }
      acc[i] = vfmaq_f32(acc[i], vmulq_f32(vcvtq_f32_s32(s), ws), vdupq_n_f32(xd));
    }
  }
  for (int i = 0; i < MT; ++i) acc_io[i] = acc[i];
}

// Output rows 4h..4h+3 (of which `valid` are real) of group g for activation rows
// m0..m0+MT, over blocks [b0, b1); adds to what y holds when `accumulate` (later K chunks).
template <int MT, bool kTwoPlanes>
inline void q4_quad_tile(const Q4Packed& w, std::size_t g, std::size_t h, std::size_t valid, std::size_t b0,
                         std::size_t b1, bool accumulate, const Q8ActView& x, std::size_t m0, float* y,
                         std::size_t ldy) {
  const std::size_t n = g * kQ4GroupRows + 4 * h;
  float32x4_t acc[MT];
  for (int i = 0; i < MT; ++i) {
    float* yi = y + (m0 + i) * ldy + n;
    if (!accumulate) {
      acc[i] = vdupq_n_f32(0);
    } else if (valid == 4) {
      acc[i] = vld1q_f32(yi);
    } else {
      float tmp[4] = {0, 0, 0, 0};
      std::memcpy(tmp, yi, valid * sizeof(float));
      acc[i] = vld1q_f32(tmp);
    }
  }
  q4_quad_rows<MT, kTwoPlanes>(w.group_codes(g), w.group_scales(g), h, b0, b1, x, m0, acc);
  for (int i = 0; i < MT; ++i) {
    float* yi = y + (m0 + i) * ldy + n;
    if (valid == 4) {
      vst1q_f32(yi, acc[i]);
    } else {
      float tmp[4];
      vst1q_f32(tmp, acc[i]);
      std::memcpy(yi, tmp, valid * sizeof(float));
    }
  }
}

// The last rows of a chunk (fewer than a full tile): one tile of exactly `left` rows.
template <int MT, bool kTwoPlanes>
inline void q4_quad_tail(const Q4Packed& w, std::size_t g, std::size_t h, std::size_t valid, std::size_t b0,
                         std::size_t b1, bool accumulate, const Q8ActView& x, std::size_t m0, std::size_t left,
                         float* y, std::size_t ldy) {
  if (left == MT) return q4_quad_tile<MT, kTwoPlanes>(w, g, h, valid, b0, b1, accumulate, x, m0, y, ldy);
  if constexpr (MT > 1) q4_quad_tail<MT - 1, kTwoPlanes>(w, g, h, valid, b0, b1, accumulate, x, m0, left, y, ldy);
}

template <bool kTwoPlanes>
void q4_matmul_groups_impl(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                           std::size_t ldy) {
  constexpr std::size_t kMT = kTileRows;
  const std::size_t nb = w.blocks_per_row();
  for (std::size_t g = g0; g < g1; ++g) {
    const std::size_t rows_left = w.rows - g * kQ4GroupRows;
    const std::size_t group_valid = rows_left < kQ4GroupRows ? rows_left : kQ4GroupRows;
    for (std::size_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
      const std::size_t b1 = b0 + kChunkBlocks < nb ? b0 + kChunkBlocks : nb;
      // Quads wholly in the zero padding of the last group are skipped.
      for (std::size_t h = 0; 4 * h < group_valid; ++h) {
        const std::size_t valid = group_valid - 4 * h < 4 ? group_valid - 4 * h : 4;
        std::size_t m = 0;
        for (; m + kMT <= x.rows; m += kMT)
          q4_quad_tile<kMT, kTwoPlanes>(w, g, h, valid, b0, b1, b0 != 0, x, m, y, ldy);
        if (m < x.rows)
          q4_quad_tail<kMT - 1, kTwoPlanes>(w, g, h, valid, b0, b1, b0 != 0, x, m, x.rows - m, y, ldy);
      }
    }
  }
}

void q4_matmul_groups_neon_dotprod(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                                   std::size_t ldy) {
  if (x.qs2 != nullptr) q4_matmul_groups_impl<true>(w, g0, g1, x, y, ldy);
  else q4_matmul_groups_impl<false>(w, g0, g1, x, y, ldy);
}

// int8 rows x one q8 activation row: per block two sdots (lane j: bytes 4j..4j+3 of each
// 16, the lanes the neon path's pairwise sums fill too, so the results are bit-identical),
// then one int->float conversion and FMA per block. R rows share each activation load.
template <int R>
inline void i8_rows_q8(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t n,
                       const Q8ActView& x, float* y) {
  float32x4_t acc[R];
  for (int r = 0; r < R; ++r) acc[r] = vdupq_n_f32(0);
  for (std::size_t b = 0; b < cols / 32; ++b) {
    const int8x16_t a0 = vld1q_s8(x.qs + b * 32), a1 = vld1q_s8(x.qs + b * 32 + 16);
    const float xd = x.d[b];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const std::int8_t* row = w + (n + r) * cols + b * 32;
      int32x4_t s = vdotq_s32(vdupq_n_s32(0), vld1q_s8(row), a0);
      s = vdotq_s32(s, vld1q_s8(row + 16), a1);
      acc[r] = vfmaq_n_f32(acc[r], vcvtq_f32_s32(s), xd);
    }
  }
  for (int r = 0; r < R; ++r) y[n + r] = scale[n + r] * vaddvq_f32(acc[r]);
}

void i8_gemv_q8_neon_dotprod(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0,
                             std::size_t r1, const Q8ActView& x, float* y) {
  std::size_t n = r0;
  for (; n + 4 <= r1; n += 4) i8_rows_q8<4>(w, scale, cols, n, x, y);
  for (; n < r1; ++n) i8_rows_q8<1>(w, scale, cols, n, x, y);
}

}  // namespace

namespace ringlm::kernels {
// The activation quantizer and the f32 LM-head GEMV have no integer dot to speed up: the
// neon ones are reused; gelu_mul / soft_cap are the scalar forms, as on the neon path.
const KernelTable kNeonDotprodKernels = {
    quantize_act_row_neon,
    q4_matmul_groups_neon_dotprod,
    i8_gemv_f32_neon,
    i8_gemv_q8_neon_dotprod,
    gelu_mul_scalar,
    soft_cap_scalar,
    nullptr,  // prepack_act: rows read in place
};
}  // namespace ringlm::kernels
#endif
