// "q6kp16": the kernels' layout for ggml Q6_K matrices (GGUF), an exact regrouping of the
// file's blocks in 16-row groups like q4p16 / q4kp16, so a SIMD lane owns one output row.
// A matrix W [rows, cols] (cols % 256 == 0) is cut into groups of 16 rows (the last
// zero-padded); group g is cols/256 super-block stretches of kSuperBytes bytes:
//
//   for each block j = 0..7 of 32 values (one activation block), kBlockBytes bytes:
//     low   [4 t][16 r][4 B]   byte i: low 4 bits of value 4t+i | those of value 16+4t+i << 4
//     high  [2 u][16 r][4 B]   byte i: top 2 bits of values 8u+i, 16+8u+i, 8u+4+i, 16+8u+4+i
//                              in bit pairs 0-1, 2-3, 4-5, 6-7 (so step t = 2u + (t & 1)
//                              reads bit pairs 4(t&1) and 4(t&1)+2)
//   sc    [16 k][16 r] int8    sub-block scales (sub-block k = values 16k..16k+15)
//   d     [16 r] fp16
//
// 210 bytes per row and super-block, as in the file. Value = d * sc_k * (q - 32), q in 0..63;
// the first 16 values of a block (its low-nibble steps) are sub-block 2j, the last 16 (high
// nibbles) sub-block 2j+1, so each half of a block's integer dot has one scale.
// q6k_unpack_row recovers the original blocks byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dequant_blocks.h"

namespace ringlm::kernels {

inline constexpr std::size_t kQ6KGroupRows = 16;

struct Q6KPacked {
  static constexpr std::size_t kBlockBytes = 256 + 128;
  static constexpr std::size_t kScOffset = 8 * kBlockBytes;   // 3072
  static constexpr std::size_t kDOffset = kScOffset + 256;     // 3328
  static constexpr std::size_t kSuperBytes = kDOffset + 32;    // 3360

  const std::uint8_t* data = nullptr;  // any alignment (64 recommended)
  std::size_t rows = 0, cols = 0;      // cols % 256 == 0

  std::size_t superblocks() const { return cols / 256; }
  std::size_t groups() const { return (rows + kQ6KGroupRows - 1) / kQ6KGroupRows; }
  std::size_t group_bytes() const { return superblocks() * kSuperBytes; }
  std::size_t bytes() const { return groups() * group_bytes(); }
  const std::uint8_t* super(std::size_t g, std::size_t s) const { return data + g * group_bytes() + s * kSuperBytes; }
};

// Bytes of a packed [rows, cols] matrix. Throws ringlm::Error unless rows > 0 and cols is a
// positive multiple of 256.
std::size_t q6k_packed_bytes(std::size_t rows, std::size_t cols);

// Writes row `row` (cols/256 Q6_K blocks) into a packed matrix being built (dst of
// q6k_packed_bytes bytes, zero-initialised). Distinct rows touch distinct bytes.
void q6k_pack_row(const BlockQ6_K* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst);

// The inverse: row `row` as the original Q6_K blocks.
void q6k_unpack_row(const Q6KPacked& w, std::size_t row, BlockQ6_K* out);

}  // namespace ringlm::kernels
