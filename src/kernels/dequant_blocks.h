// Byte layouts of the ggml block quantization formats found in GGUF files. A tensor row of
// n values is n / kElems consecutive blocks; the structs are packed so that sizeof() is the
// on-disk block size and a row can be read in place from the memory mapping.
#pragma once

#include <cstdint>

namespace ringlm::kernels {

inline constexpr int kQK = 32;    // values per block in the "_0"/"_1" formats
inline constexpr int kQKK = 256;  // values per super-block in the K formats
inline constexpr int kKScaleBytes = 12;  // 8 packed 6-bit (scale, min) pairs of Q4_K / Q5_K

#pragma pack(push, 1)
// 32 values: x = d * q, q in [-128, 127].
struct BlockQ8_0 {
  std::uint16_t d;        // fp16 scale
  std::int8_t qs[kQK];
};
// 32 values: x = d * (q - 8), q in [0, 15]; byte j holds value j (low nibble) and j + 16 (high).
struct BlockQ4_0 {
  std::uint16_t d;
  std::uint8_t qs[kQK / 2];
};
// 32 values: x = d * q + m, q in [0, 15]; same nibble order as Q4_0.
struct BlockQ4_1 {
  std::uint16_t d;
  std::uint16_t m;
  std::uint8_t qs[kQK / 2];
};
// 256 values in 8 sub-blocks of 32: x = d * sc[j] * q - dmin * mn[j], q in [0, 15], with the
// 6-bit sc/mn packed in `scales`. Each 32-byte run of qs holds two sub-blocks: the low
// nibbles are sub-block 2i, the high nibbles sub-block 2i + 1.
struct BlockQ4_K {
  std::uint16_t d;
  std::uint16_t dmin;
  std::uint8_t scales[kKScaleBytes];
  std::uint8_t qs[kQKK / 2];
};
// As Q4_K with a fifth bit per value: bit (2i) of qh[l] extends value l of sub-block 2i and
// bit (2i + 1) extends value l of sub-block 2i + 1; q in [0, 31].
struct BlockQ5_K {
  std::uint16_t d;
  std::uint16_t dmin;
  std::uint8_t scales[kKScaleBytes];
  std::uint8_t qh[kQKK / 8];
  std::uint8_t qs[kQKK / 2];
};
// 256 values in 16 sub-blocks of 16: x = d * scales[j] * (q - 32), q in [0, 63]; the low four
// bits of q are in ql and the high two in qh (layout in dequant_ggml.cpp).
struct BlockQ6_K {
  std::uint8_t ql[kQKK / 2];
  std::uint8_t qh[kQKK / 4];
  std::int8_t scales[kQKK / 16];
  std::uint16_t d;
};
// 32 values: x = d * (q - 16), q in [0, 31]: the low four bits as Q4_0 (byte j: values j and
// j + 16), the fifth bit of value i is bit i of the little-endian 32-bit qh.
struct BlockQ5_0 {
  std::uint16_t d;
  std::uint8_t qh[4];
  std::uint8_t qs[kQK / 2];
};
// 32 values: x = d * q + m, q in [0, 31], bits as Q5_0.
struct BlockQ5_1 {
  std::uint16_t d;
  std::uint16_t m;
  std::uint8_t qh[4];
  std::uint8_t qs[kQK / 2];
};
// 256 values in 16 sub-blocks of 16: x = d * (sc & 15) * q - dmin * (sc >> 4), q in [0, 3]
// (2-bit codes in qs, layout in dequant_ggml_more.cpp).
struct BlockQ2_K {
  std::uint8_t scales[kQKK / 16];
  std::uint8_t qs[kQKK / 4];
  std::uint16_t d;
  std::uint16_t dmin;
};
// 256 values in 16 sub-blocks of 16: x = d * (s - 32) * (q - 4 * !h), q in [0, 3] from qs,
// h from hmask, s a 6-bit scale packed in 12 bytes (layout in dequant_ggml_more.cpp).
struct BlockQ3_K {
  std::uint8_t hmask[kQKK / 8];
  std::uint8_t qs[kQKK / 4];
  std::uint8_t scales[12];
  std::uint16_t d;
};
// 32 values: x = d * kIq4nlValues[q], q in [0, 15], nibbles as Q4_0.
struct BlockIQ4_NL {
  std::uint16_t d;
  std::uint8_t qs[kQK / 2];
};
// 256 values in 8 sub-blocks of 32: x = d * (ls - 32) * kIq4nlValues[q] with a 6-bit ls per
// sub-block (low 4 bits in scales_l, high 2 in scales_h); each sub-block's 16 bytes of qs
// hold its values j (low nibble) and j + 16 (high nibble).
struct BlockIQ4_XS {
  std::uint16_t d;
  std::uint16_t scales_h;
  std::uint8_t scales_l[kQKK / 64];
  std::uint8_t qs[kQKK / 2];
};
// The IQ2/IQ3/IQ1 family (dequant_iq.cpp): 256 values coded as groups of 8 (or 4) taken from
// a fixed codebook (kernels/iq_grids.h) with per-group sign bits and small sub-block scales.
// 256 values: per 32 values, 4 grid indices (8 bits each) then 4 x 7 sign bits and a 4-bit
// scale packed in one 32-bit word (qs holds 8 such pairs of words).
struct BlockIQ2_XXS {
  std::uint16_t d;
  std::uint16_t qs[kQKK / 8];
};
// 256 values: per 8 values one 16-bit word, 9-bit grid index + 7 sign bits; two 4-bit scales
// per 32 values.
struct BlockIQ2_XS {
  std::uint16_t d;
  std::uint16_t qs[kQKK / 8];
  std::uint8_t scales[kQKK / 32];
};
// 256 values: 10-bit grid indices (low 8 bits in qs[0..31], high 2 in qh), explicit sign
// bytes (qs[32..63]), two 4-bit scales per 32 values.
struct BlockIQ2_S {
  std::uint16_t d;
  std::uint8_t qs[kQKK / 4];
  std::uint8_t qh[kQKK / 32];
  std::uint8_t scales[kQKK / 32];
};
// 256 values: 64 8-bit indices of 4-value grid entries, then per 32 values a 32-bit word of
// 4 x 7 sign bits and a 4-bit scale.
struct BlockIQ3_XXS {
  std::uint16_t d;
  std::uint8_t qs[3 * kQKK / 8];
};
// 256 values: 9-bit indices of 4-value grid entries (high bits in qh), explicit sign bytes,
// one 4-bit scale per 32 values.
struct BlockIQ3_S {
  std::uint16_t d;
  std::uint8_t qs[kQKK / 4];
  std::uint8_t qh[kQKK / 32];
  std::uint8_t signs[kQKK / 8];
  std::uint8_t scales[kQKK / 64];
};
// 256 values: 11-bit indices of 8-value ternary grid entries (low 8 bits in qs, high 3 in
// qh), per 32 values a 3-bit scale and the sign of a +-1/8 shift in qh's top bits.
struct BlockIQ1_S {
  std::uint16_t d;
  std::uint8_t qs[kQKK / 8];
  std::uint16_t qh[kQKK / 32];
};
// 256 values: as IQ1_S with a shift sign per 8 values, 3-bit scales per 16 values, and the
// fp16 super-block scale spread over the top nibbles of the four 16-bit scale words.
struct BlockIQ1_M {
  std::uint8_t qs[kQKK / 8];
  std::uint8_t qh[kQKK / 16];
  std::uint8_t scales[kQKK / 32];
};
#pragma pack(pop)

// IQ4_NL / IQ4_XS: the 16 non-uniform levels a 4-bit code selects.
inline constexpr std::int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                 1,    13,   25,  38,  53,  69,  89,  113};

static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockIQ2_XXS) == 66);
static_assert(sizeof(BlockIQ2_XS) == 74);
static_assert(sizeof(BlockIQ2_S) == 82);
static_assert(sizeof(BlockIQ3_XXS) == 98);
static_assert(sizeof(BlockIQ3_S) == 110);
static_assert(sizeof(BlockIQ1_S) == 50);
static_assert(sizeof(BlockIQ1_M) == 56);

}  // namespace ringlm::kernels
