// "q3kp16": the kernels' layout for ggml Q3_K matrices (GGUF), an exact regrouping of the
// file's blocks in 16-row groups like q4kp16 / q6kp16, so a SIMD lane owns one output row.
// A matrix W [rows, cols] (cols % 256 == 0) is cut into groups of 16 rows (the last
// zero-padded); group g is cols/256 super-block stretches of kSuperBytes bytes:
//
//   for each block j = 0..7 of 32 values (one activation block), kBlockBytes bytes:
//     low   [2 half][16 r][4 B]  byte i: the two low bits of value 16*half + 4t + i in bit
//                                pair t (t = 0..3), so step t reads bit pair t
//     high  [16 r][4 B]          byte i: the high bit of value 4t + i in bit t and of value
//                                16 + 4t + i in bit 4 + t
//   sc    [16 k][16 r] int8      sub-block scales minus 32 (-32..31; sub-block k = values
//                                16k..16k+15, so block j's halves are sub-blocks 2j, 2j+1)
//   d     [16 r] fp16
//
// 114 bytes per row and super-block (the file's Q3_K: 110). With code = low + 4*high (0..7),
// value = d * (s_k - 32) * (code - 4), exactly Q3_K's d * (s - 32) * (low - 4*!high);
// q3k_unpack_row recovers the original blocks byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dequant_blocks.h"

namespace ringlm::kernels {

inline constexpr std::size_t kQ3KGroupRows = 16;

struct Q3KPacked {
  static constexpr std::size_t kBlockBytes = 128 + 64;
  static constexpr std::size_t kScOffset = 8 * kBlockBytes;  // 1536
  static constexpr std::size_t kDOffset = kScOffset + 256;    // 1792
  static constexpr std::size_t kSuperBytes = kDOffset + 32;   // 1824

  const std::uint8_t* data = nullptr;  // any alignment (64 recommended)
  std::size_t rows = 0, cols = 0;      // cols % 256 == 0

  std::size_t superblocks() const { return cols / 256; }
  std::size_t groups() const { return (rows + kQ3KGroupRows - 1) / kQ3KGroupRows; }
  std::size_t group_bytes() const { return superblocks() * kSuperBytes; }
  std::size_t bytes() const { return groups() * group_bytes(); }
  const std::uint8_t* super(std::size_t g, std::size_t s) const { return data + g * group_bytes() + s * kSuperBytes; }
};

// Bytes of a packed [rows, cols] matrix. Throws ringlm::Error unless rows > 0 and cols is a
// positive multiple of 256.
std::size_t q3k_packed_bytes(std::size_t rows, std::size_t cols);

// Writes row `row` (cols/256 Q3_K blocks) into a packed matrix being built (dst of
// q3k_packed_bytes bytes, zero-initialised). Distinct rows touch distinct bytes.
void q3k_pack_row(const BlockQ3_K* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst);

// The inverse: row `row` as the original Q3_K blocks.
void q3k_unpack_row(const Q3KPacked& w, std::size_t row, BlockQ3_K* out);

}  // namespace ringlm::kernels
