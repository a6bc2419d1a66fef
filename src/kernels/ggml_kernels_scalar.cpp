// Scalar reference kernels for ggml_quant_gemm.h: the semantics every SIMD path reproduces
// (integer sums exact, float accumulation per output in block order). Also the path used on
// aarch64, which has no dedicated NEON version of these yet.
#include <cstring>

#include "kernels/dequant_blocks.h"
#include "kernels/dequant_ggml.h"
#include "kernels/ggml_kernel_table.h"
#include "util/float16.h"

namespace ringlm::kernels {

namespace {

// Dot of one weight row (cols values) with one activation row of one plane: codes q, block
// scales d and biases (-8 * sum of the block's codes, so sum(q) = -bias / 8 exactly).
using DotFn = float (*)(const std::uint8_t* w, std::size_t cols, const std::int8_t* q, const float* d,
                        const std::int32_t* bias);

float dot_q8_0(const std::uint8_t* w, std::size_t cols, const std::int8_t* q, const float* d, const std::int32_t*) {
  const auto* blocks = reinterpret_cast<const BlockQ8_0*>(w);
  float acc = 0.0f;
  for (std::size_t b = 0; b < cols / kQK; ++b) {
    std::int32_t s = 0;
    for (int j = 0; j < kQK; ++j) s += blocks[b].qs[j] * q[b * kQK + j];
    acc += (fp16_to_f32(blocks[b].d) * d[b]) * static_cast<float>(s);
  }
  return acc;
}

// Q4_K and Q5_K: sub-block j of a super-block is activation block j (both 32 values).
template <bool kFifthBit>
float dot_k4or5(const std::uint8_t* w, std::size_t cols, const std::int8_t* q, const float* d,
                const std::int32_t* bias) {
  constexpr std::size_t kBytes = kFifthBit ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  float acc = 0.0f;
  for (std::size_t sb = 0; sb < cols / kQKK; ++sb) {
    const std::uint8_t* blk = w + sb * kBytes;
    std::uint16_t dh, dmh;
    std::memcpy(&dh, blk, 2);
    std::memcpy(&dmh, blk + 2, 2);
    const std::uint8_t* scales = blk + 4;
    const std::uint8_t* qh = blk + 4 + kKScaleBytes;  // Q5_K only
    const std::uint8_t* qs = kFifthBit ? qh + kQKK / 8 : blk + 4 + kKScaleBytes;
    const float dd = fp16_to_f32(dh), dm = fp16_to_f32(dmh);
    for (int j = 0; j < 8; ++j) {
      int sc, mn;
      k_scale_min(j, scales, &sc, &mn);
      const std::size_t ab = sb * 8 + static_cast<std::size_t>(j);
      const std::int8_t* a = q + ab * kQK;
      const int shift = (j & 1) * 4;
      std::int32_t s = 0;
      for (int l = 0; l < 32; ++l) {
        int code = (qs[32 * (j / 2) + l] >> shift) & 0x0f;
        if (kFifthBit) code |= ((qh[l] >> j) & 1) << 4;
        s += code * a[l];
      }
      const auto sumq = static_cast<float>(-bias[ab] / 8);
      acc += ((dd * static_cast<float>(sc)) * d[ab]) * static_cast<float>(s);
      acc -= ((dm * static_cast<float>(mn)) * d[ab]) * sumq;
    }
  }
  return acc;
}

// Q6_K: activation block k = 4 * half + g of a super-block holds sub-blocks 2k and 2k + 1.
float dot_q6_k(const std::uint8_t* w, std::size_t cols, const std::int8_t* q, const float* d, const std::int32_t*) {
  const auto* blocks = reinterpret_cast<const BlockQ6_K*>(w);
  float acc = 0.0f;
  for (std::size_t sb = 0; sb < cols / kQKK; ++sb) {
    const BlockQ6_K& blk = blocks[sb];
    const float dd = fp16_to_f32(blk.d);
    for (int half = 0; half < 2; ++half) {
      const std::uint8_t* ql = blk.ql + 64 * half;
      const std::uint8_t* qh = blk.qh + 32 * half;
      for (int g = 0; g < 4; ++g) {
        const std::size_t ab = sb * 8 + static_cast<std::size_t>(4 * half + g);
        const std::int8_t* a = q + ab * kQK;
        std::int32_t s[2] = {0, 0};
        for (int l = 0; l < 32; ++l) {
          const std::uint8_t lo = ql[l + 32 * (g & 1)];
          const int code = ((g < 2 ? lo : lo >> 4) & 0x0f) | (((qh[l] >> (2 * g)) & 3) << 4);
          s[l / 16] += (code - 32) * a[l];
        }
        const std::int32_t isum = blk.scales[8 * half + 2 * g] * s[0] + blk.scales[8 * half + 2 * g + 1] * s[1];
        acc += (dd * d[ab]) * static_cast<float>(isum);
      }
    }
  }
  return acc;
}

template <DotFn Dot>
void rows(const std::uint8_t* w, std::size_t row_bytes, std::size_t r0, std::size_t r1, const Q8ActView& x,
          float* y, std::size_t ldy) {
  const std::size_t nb = x.cols / kQK;
  for (std::size_t r = r0; r < r1; ++r) {
    const std::uint8_t* wr = w + r * row_bytes;
    for (std::size_t m = 0; m < x.rows; ++m) {
      float v = Dot(wr, x.cols, x.qs + m * x.cols, x.d + m * nb, x.bias + m * nb);
      if (x.qs2 != nullptr) v += Dot(wr, x.cols, x.qs2 + m * x.cols, x.d2 + m * nb, x.bias2 + m * nb);
      y[m * ldy + r] = v;
    }
  }
}

// q4kp16 groups: per row and sub-block, the integer dot of the codes with the activation
// codes, then (d*sc) * d_x * S - (dmin*mn) * d_x * sum(q), summed in order (both planes).
void q4k_groups(const Q4KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y, std::size_t ldy) {
  const std::size_t nb = x.cols / kQK;
  for (std::size_t g = g0; g < g1; ++g)
    for (std::size_t m = 0; m < x.rows; ++m)
      for (std::size_t r = 0; r < kQ4KGroupRows; ++r) {
        const std::size_t n = g * kQ4KGroupRows + r;
        if (n >= w.rows) break;
        float acc = 0.0f;
        for (std::size_t s = 0; s < w.superblocks(); ++s) {
          const std::uint8_t* sp = w.super(g, s);
          std::uint16_t dh, dmh;
          std::memcpy(&dh, sp + Q4KPacked::kDOffset + 2 * r, 2);
          std::memcpy(&dmh, sp + Q4KPacked::kDminOffset + 2 * r, 2);
          const float dd = fp16_to_f32(dh), dm = fp16_to_f32(dmh);
          for (std::size_t j = 0; j < 8; ++j) {
            const std::size_t b = s * 8 + j, xb = m * nb + b;
            const float sc = sp[Q4KPacked::kScOffset + j * 16 + r], mn = sp[Q4KPacked::kMnOffset + j * 16 + r];
            for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
              const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * kQK;
              std::int32_t isum = 0;
              for (int t = 0; t < 4; ++t)
                for (int i = 0; i < 4; ++i) {
                  const std::uint8_t c = sp[j * 256 + t * 64 + r * 4 + i];
                  isum += (c & 0x0f) * a[4 * t + i] + (c >> 4) * a[16 + 4 * t + i];
                }
              const float dx = plane ? x.d2[xb] : x.d[xb];
              const auto sumq = static_cast<float>(-(plane ? x.bias2[xb] : x.bias[xb]) / 8);
              acc += ((dd * sc) * dx) * static_cast<float>(isum);
              acc -= ((dm * mn) * dx) * sumq;
            }
          }
        }
        y[m * ldy + n] = acc;
      }
}

// q6kp16 groups: per row and block, the integer dots of the 6-bit codes with the activation
// codes over each half (sub-blocks 2j and 2j+1), less 32 * the half's activation sum, times
// d * sc * d_x, summed in order (both planes).
void q6k_groups(const Q6KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y, std::size_t ldy) {
  const std::size_t nb = x.cols / kQK;
  for (std::size_t g = g0; g < g1; ++g)
    for (std::size_t m = 0; m < x.rows; ++m)
      for (std::size_t r = 0; r < kQ6KGroupRows; ++r) {
        const std::size_t n = g * kQ6KGroupRows + r;
        if (n >= w.rows) break;
        float acc = 0.0f;
        for (std::size_t s = 0; s < w.superblocks(); ++s) {
          const std::uint8_t* sp = w.super(g, s);
          std::uint16_t dh;
          std::memcpy(&dh, sp + Q6KPacked::kDOffset + 2 * r, 2);
          const float dd = fp16_to_f32(dh);
          for (std::size_t j = 0; j < 8; ++j) {
            const std::uint8_t* bp = sp + j * Q6KPacked::kBlockBytes;
            const std::size_t b = s * 8 + j, xb = m * nb + b;
            const auto scl = static_cast<float>(static_cast<std::int8_t>(sp[Q6KPacked::kScOffset + 2 * j * 16 + r]));
            const auto sch = static_cast<float>(static_cast<std::int8_t>(sp[Q6KPacked::kScOffset + (2 * j + 1) * 16 + r]));
            for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
              const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * kQK;
              std::int32_t s_lo = 0, s_hi = 0;
              for (int t = 0; t < 4; ++t)
                for (int i = 0; i < 4; ++i) {
                  const std::uint8_t c = bp[t * 64 + r * 4 + i];
                  const std::uint8_t hb = bp[256 + (t / 2) * 64 + r * 4 + i];
                  const int sh = 4 * (t & 1);
                  const int q_lo = (c & 0x0f) | (((hb >> sh) & 3) << 4);
                  const int q_hi = (c >> 4) | (((hb >> (sh + 2)) & 3) << 4);
                  s_lo += (q_lo - 32) * a[4 * t + i];
                  s_hi += (q_hi - 32) * a[16 + 4 * t + i];
                }
              const float dx = plane ? x.d2[xb] : x.d[xb];
              acc += ((dd * scl) * dx) * static_cast<float>(s_lo);
              acc += ((dd * sch) * dx) * static_cast<float>(s_hi);
            }
          }
        }
        y[m * ldy + n] = acc;
      }
}

// q8p16 groups: per row and block the integer dot, times d_w * d_x, summed in order.
void q8p16_groups(const Q8P16Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                  std::size_t ldy) {
  const std::size_t nb = x.cols / kQK;
  for (std::size_t g = g0; g < g1; ++g)
    for (std::size_t m = 0; m < x.rows; ++m)
      for (std::size_t r = 0; r < kQ8GroupRows; ++r) {
        const std::size_t n = g * kQ8GroupRows + r;
        if (n >= w.rows) break;
        float acc = 0.0f;
        for (std::size_t b = 0; b < w.blocks(); ++b) {
          const std::uint8_t* bp = w.block(g, b);
          std::uint16_t dh;
          std::memcpy(&dh, bp + Q8P16Packed::kDOffset + 2 * r, 2);
          const float dw = fp16_to_f32(dh);
          const std::size_t xb = m * nb + b;
          for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
            const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * kQK;
            std::int32_t isum = 0;
            for (int t = 0; t < 8; ++t)
              for (int i = 0; i < 4; ++i)
                isum += static_cast<std::int8_t>(bp[t * 64 + r * 4 + i]) * a[4 * t + i];
            acc += (dw * (plane ? x.d2[xb] : x.d[xb])) * static_cast<float>(isum);
          }
        }
        y[m * ldy + n] = acc;
      }
}

// iq4xsp16 groups: per row and sub-block, the integer dot of the levels L[index] with the
// activation codes, times (d*(ls-32)) * d_x, summed in order (both planes).
void iq4xs_groups(const Iq4XsPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                  std::size_t ldy) {
  const std::size_t nb = x.cols / kQK;
  for (std::size_t g = g0; g < g1; ++g)
    for (std::size_t m = 0; m < x.rows; ++m)
      for (std::size_t r = 0; r < kIq4XsGroupRows; ++r) {
        const std::size_t n = g * kIq4XsGroupRows + r;
        if (n >= w.rows) break;
        float acc = 0.0f;
        for (std::size_t s = 0; s < w.superblocks(); ++s) {
          const std::uint8_t* sp = w.super(g, s);
          std::uint16_t dh;
          std::memcpy(&dh, sp + Iq4XsPacked::kDOffset + 2 * r, 2);
          const float dd = fp16_to_f32(dh);
          for (std::size_t j = 0; j < 8; ++j) {
            const std::size_t b = s * 8 + j, xb = m * nb + b;
            const auto sc = static_cast<float>(static_cast<std::int8_t>(sp[Iq4XsPacked::kScOffset + j * 16 + r]));
            for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
              const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * kQK;
              std::int32_t isum = 0;
              for (int t = 0; t < 4; ++t)
                for (int i = 0; i < 4; ++i) {
                  const std::uint8_t c = sp[j * 256 + t * 64 + r * 4 + i];
                  isum += kIq4nlValues[c & 0x0f] * a[4 * t + i] + kIq4nlValues[c >> 4] * a[16 + 4 * t + i];
                }
              acc += ((dd * sc) * (plane ? x.d2[xb] : x.d[xb])) * static_cast<float>(isum);
            }
          }
        }
        y[m * ldy + n] = acc;
      }
}

// q5kp16 groups: as q4kp16, each code with its fifth bit from the high line.
void q5k_groups(const Q5KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y, std::size_t ldy) {
  const std::size_t nb = x.cols / kQK;
  for (std::size_t g = g0; g < g1; ++g)
    for (std::size_t m = 0; m < x.rows; ++m)
      for (std::size_t r = 0; r < kQ5KGroupRows; ++r) {
        const std::size_t n = g * kQ5KGroupRows + r;
        if (n >= w.rows) break;
        float acc = 0.0f;
        for (std::size_t s = 0; s < w.superblocks(); ++s) {
          const std::uint8_t* sp = w.super(g, s);
          std::uint16_t dh, dmh;
          std::memcpy(&dh, sp + Q5KPacked::kDOffset + 2 * r, 2);
          std::memcpy(&dmh, sp + Q5KPacked::kDminOffset + 2 * r, 2);
          const float dd = fp16_to_f32(dh), dm = fp16_to_f32(dmh);
          for (std::size_t j = 0; j < 8; ++j) {
            const std::size_t b = s * 8 + j, xb = m * nb + b;
            const float sc = sp[Q5KPacked::kScOffset + j * 16 + r], mn = sp[Q5KPacked::kMnOffset + j * 16 + r];
            for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
              const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * kQK;
              std::int32_t isum = 0;
              for (int t = 0; t < 4; ++t)
                for (int i = 0; i < 4; ++i) {
                  const std::uint8_t c = sp[j * 256 + t * 64 + r * 4 + i];
                  const std::uint8_t h = sp[Q5KPacked::kHighOffset + j * 64 + r * 4 + i];
                  isum += ((c & 0x0f) | (((h >> t) & 1) << 4)) * a[4 * t + i];
                  isum += ((c >> 4) | (((h >> (4 + t)) & 1) << 4)) * a[16 + 4 * t + i];
                }
              const float dx = plane ? x.d2[xb] : x.d[xb];
              const auto sumq = static_cast<float>(-(plane ? x.bias2[xb] : x.bias[xb]) / 8);
              acc += ((dd * sc) * dx) * static_cast<float>(isum);
              acc -= ((dm * mn) * dx) * sumq;
            }
          }
        }
        y[m * ldy + n] = acc;
      }
}

// q3kp16 groups: per row and half block (one 16-value sub-block), the integer dot of the
// signed codes (code - 4) with the activation codes, times (d*(s-32)) * d_x, in order.
void q3k_groups(const Q3KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y, std::size_t ldy) {
  const std::size_t nb = x.cols / kQK;
  for (std::size_t g = g0; g < g1; ++g)
    for (std::size_t m = 0; m < x.rows; ++m)
      for (std::size_t r = 0; r < kQ3KGroupRows; ++r) {
        const std::size_t n = g * kQ3KGroupRows + r;
        if (n >= w.rows) break;
        float acc = 0.0f;
        for (std::size_t s = 0; s < w.superblocks(); ++s) {
          const std::uint8_t* sp = w.super(g, s);
          std::uint16_t dh;
          std::memcpy(&dh, sp + Q3KPacked::kDOffset + 2 * r, 2);
          const float dd = fp16_to_f32(dh);
          for (std::size_t j = 0; j < 8; ++j) {
            const std::uint8_t* bp = sp + j * Q3KPacked::kBlockBytes;
            const std::size_t b = s * 8 + j, xb = m * nb + b;
            for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
              const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * kQK;
              for (int half = 0; half < 2; ++half) {
                std::int32_t isum = 0;
                for (int t = 0; t < 4; ++t)
                  for (int i = 0; i < 4; ++i) {
                    const int low = (bp[half * 64 + r * 4 + i] >> (2 * t)) & 3;
                    const int high = (bp[128 + r * 4 + i] >> (4 * half + t)) & 1;
                    isum += (low + 4 * high - 4) * a[16 * half + 4 * t + i];
                  }
                const auto sc = static_cast<float>(static_cast<std::int8_t>(sp[Q3KPacked::kScOffset + (2 * j + half) * 16 + r]));
                acc += ((dd * sc) * (plane ? x.d2[xb] : x.d[xb])) * static_cast<float>(isum);
              }
            }
          }
        }
        y[m * ldy + n] = acc;
      }
}

}  // namespace

const GgmlKernelTable kGgmlScalarKernels = {
    rows<dot_q8_0>,
    rows<dot_k4or5<false>>,
    rows<dot_k4or5<true>>,
    rows<dot_q6_k>,
    q4k_groups,
    q6k_groups,
    q8p16_groups,
    iq4xs_groups,
    q3k_groups,
    q5k_groups,
};

}  // namespace ringlm::kernels
