// Scalar dequantization of ggml's codebook formats IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S and IQ1_M (block layouts in dequant_blocks.h, codebooks in iq_grids.h). ringlm has no
// kernel for them: a matrix of these types is decoded here and re-rounded to Q8_0 at load
// (model::convert_slow_gguf_blocks), or decoded row by row with --activations f32.
//
// Each value is computed with the operations, in the order, of ggml's reference decoder
// (scale product first, then the codebook magnitude, then the sign), so the results are
// bit-identical to llama.cpp's dequantization (tests/io/iq_dequant_test.py).
#include <cstring>

#include "kernels/dequant_ggml.h"
#include "kernels/iq_grids.h"
#include "util/float16.h"

#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // no fused multiply-add: each product rounds on its own
#endif

namespace ringlm::kernels {

namespace {

inline float grid_byte(std::uint64_t entry, int j) { return static_cast<float>((entry >> (8 * j)) & 0xff); }
inline float grid_byte(std::uint32_t entry, int j) { return static_cast<float>((entry >> (8 * j)) & 0xff); }
inline float sign_of(std::uint8_t signs, int j) { return (signs >> j) & 1u ? -1.0f : 1.0f; }

// 8 values: scale * magnitude from a codebook entry, then the sign.
inline void put8(float* y, float scale, std::uint64_t entry, std::uint8_t signs) {
  for (int j = 0; j < 8; ++j) y[j] = scale * grid_byte(entry, j) * sign_of(signs, j);
}

// 8 values from two 4-value entries (IQ3): signs bits 0-3 for the first, 4-7 for the second.
inline void put4x2(float* y, float scale, std::uint32_t e1, std::uint32_t e2, std::uint8_t signs) {
  for (int j = 0; j < 4; ++j) {
    y[j] = scale * grid_byte(e1, j) * sign_of(signs, j);
    y[j + 4] = scale * grid_byte(e2, j) * sign_of(signs, j + 4);
  }
}

// IQ1: 8 values scale * (t + delta), t in {-1, 0, 1} a signed byte of the entry.
inline void put_ternary8(float* y, float scale, std::uint64_t entry, float delta) {
  for (int j = 0; j < 8; ++j) {
    const auto t = static_cast<std::int8_t>((entry >> (8 * j)) & 0xff);
    y[j] = scale * (static_cast<float>(t) + delta);
  }
}

inline std::uint32_t load_u32(const void* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline std::uint16_t load_u16(const void* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

}  // namespace

void dequantize_row_iq2_xxs(const BlockIQ2_XXS* src, float* y, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b) {
    const float d = fp16_to_f32(src[b].d);
    const auto* q8 = reinterpret_cast<const std::uint8_t*>(src[b].qs);
    for (int ib = 0; ib < kQKK / 32; ++ib) {
      const std::uint8_t* idx = q8 + 8 * ib;           // 4 grid indices
      const std::uint32_t meta = load_u32(q8 + 8 * ib + 4);  // 4 x 7 sign bits, 4-bit scale
      const float db = d * (0.5f + static_cast<float>(meta >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l, y += 8) put8(y, db, kIq2xxsGrid[idx[l]], iq_signs_from7(meta >> (7 * l)));
    }
  }
}

void dequantize_row_iq2_xs(const BlockIQ2_XS* src, float* y, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b) {
    const float d = fp16_to_f32(src[b].d);
    for (int ib = 0; ib < kQKK / 32; ++ib) {
      const float db[2] = {d * (0.5f + static_cast<float>(src[b].scales[ib] & 0x0f)) * 0.25f,
                           d * (0.5f + static_cast<float>(src[b].scales[ib] >> 4)) * 0.25f};
      for (int l = 0; l < 4; ++l, y += 8) {
        const std::uint16_t q = load_u16(&src[b].qs[4 * ib + l]);
        put8(y, db[l / 2], kIq2xsGrid[q & 511], iq_signs_from7(q >> 9));
      }
    }
  }
}

void dequantize_row_iq2_s(const BlockIQ2_S* src, float* y, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b) {
    const float d = fp16_to_f32(src[b].d);
    const std::uint8_t* qs = src[b].qs;
    const std::uint8_t* signs = src[b].qs + kQKK / 8;
    for (int ib = 0; ib < kQKK / 32; ++ib, qs += 4, signs += 4) {
      const float db[2] = {d * (0.5f + static_cast<float>(src[b].scales[ib] & 0x0f)) * 0.25f,
                           d * (0.5f + static_cast<float>(src[b].scales[ib] >> 4)) * 0.25f};
      for (int l = 0; l < 4; ++l, y += 8) {
        const int index = qs[l] | ((src[b].qh[ib] << (8 - 2 * l)) & 0x300);  // 2 high bits per group
        put8(y, db[l / 2], kIq2sGrid[index], signs[l]);
      }
    }
  }
}

void dequantize_row_iq3_xxs(const BlockIQ3_XXS* src, float* y, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b) {
    const float d = fp16_to_f32(src[b].d);
    const std::uint8_t* qs = src[b].qs;
    const std::uint8_t* meta_bytes = src[b].qs + kQKK / 4;
    for (int ib = 0; ib < kQKK / 32; ++ib, qs += 8) {
      const std::uint32_t meta = load_u32(meta_bytes + 4 * ib);
      const float db = d * (0.5f + static_cast<float>(meta >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l, y += 8)
        put4x2(y, db, kIq3xxsGrid[qs[2 * l]], kIq3xxsGrid[qs[2 * l + 1]], iq_signs_from7(meta >> (7 * l)));
    }
  }
}

void dequantize_row_iq3_s(const BlockIQ3_S* src, float* y, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b) {
    const float d = fp16_to_f32(src[b].d);
    const std::uint8_t* qs = src[b].qs;
    const std::uint8_t* signs = src[b].signs;
    // Each 32 values: 8 indices with a ninth bit from one qh byte, 4 sign bytes, one 4-bit scale.
    for (int ib = 0; ib < kQKK / 32; ++ib, qs += 8, signs += 4) {
      const int s = (src[b].scales[ib / 2] >> (4 * (ib % 2))) & 0x0f;
      const float db = d * static_cast<float>(1 + 2 * s);
      const std::uint8_t qh = src[b].qh[ib];
      for (int l = 0; l < 4; ++l, y += 8) {
        const int i1 = qs[2 * l] | ((qh << (8 - 2 * l)) & 256);
        const int i2 = qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256);
        put4x2(y, db, kIq3sGrid[i1], kIq3sGrid[i2], signs[l]);
      }
    }
  }
}

void dequantize_row_iq1_s(const BlockIQ1_S* src, float* y, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b) {
    const float d = fp16_to_f32(src[b].d);
    const std::uint8_t* qs = src[b].qs;
    for (int ib = 0; ib < kQKK / 32; ++ib, qs += 4) {
      const std::uint16_t qh = load_u16(&src[b].qh[ib]);
      const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
      const float delta = (qh & 0x8000) ? -kIq1Delta : kIq1Delta;
      for (int l = 0; l < 4; ++l, y += 8) put_ternary8(y, dl, kIq1sGrid[qs[l] | (((qh >> (3 * l)) & 7) << 8)], delta);
    }
  }
}

void dequantize_row_iq1_m(const BlockIQ1_M* src, float* y, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kQKK; ++b) {
    std::uint16_t sc[4];
    std::memcpy(sc, src[b].scales, sizeof sc);
    const float d = fp16_to_f32(iq1m_block_scale(src[b]));
    const std::uint8_t* qs = src[b].qs;
    const std::uint8_t* qh = src[b].qh;
    for (int ib = 0; ib < kQKK / 32; ++ib, qs += 4, qh += 2) {
      const int shift = 6 * (ib % 2);
      const float dl[2] = {d * static_cast<float>(2 * ((sc[ib / 2] >> shift) & 7) + 1),
                           d * static_cast<float>(2 * ((sc[ib / 2] >> (shift + 3)) & 7) + 1)};
      for (int l = 0; l < 4; ++l, y += 8) {
        const std::uint8_t h = qh[l / 2] >> (4 * (l % 2));  // 3 index bits, then the shift sign
        const int index = qs[l] | ((h & 7) << 8);
        put_ternary8(y, dl[l / 2], kIq1sGrid[index], (h & 8) ? -kIq1Delta : kIq1Delta);
      }
    }
  }
}

std::uint16_t iq1m_block_scale(const BlockIQ1_M& b) {
  std::uint16_t sc[4];
  std::memcpy(sc, b.scales, sizeof sc);
  return static_cast<std::uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
}

}  // namespace ringlm::kernels
