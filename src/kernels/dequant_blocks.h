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
#pragma pack(pop)

static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

}  // namespace ringlm::kernels
