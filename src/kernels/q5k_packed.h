// "q5kp16": the kernels' layout for ggml Q5_K matrices (GGUF), q4kp16 (q4k_packed.h) plus a
// line of fifth bits, so a SIMD lane owns one output row and 16 rows share every instruction.
// A matrix W [rows, cols] (cols % 256 == 0) is cut into groups of 16 rows (the last
// zero-padded); group g is cols/256 super-block stretches of kSuperBytes bytes:
//
//   codes [8 j][4 t][16 r][4 B]  the low four bits of sub-block j (values 32j..32j+31) in
//                                 q4kp16 order: byte e (0..15) holds value e in its low nibble
//                                 and value e + 16 in its high nibble; step t = bytes 4t..4t+3
//   high  [8 j][16 r][4 B]        byte i: the fifth bit of value 4t + i in bit t and of value
//                                 16 + 4t + i in bit 4 + t (t = 0..3), so step t shifts by t
//   sc    [8 j][16 r] u8          the 6-bit sub-block scales
//   mn    [8 j][16 r] u8          the 6-bit sub-block mins
//   d     [16 r] fp16, dmin [16 r] fp16
//
// 180 bytes per row and super-block (the file's Q5_K: 176). Value = d*sc_j*code - dmin*mn_j
// with code = low + 16*high (0..31), exactly as in the file; q5k_unpack_row recovers the
// original blocks byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dequant_blocks.h"

namespace ringlm::kernels {

inline constexpr std::size_t kQ5KGroupRows = 16;

struct Q5KPacked {
  static constexpr std::size_t kCodeBytes = 8 * 256;
  static constexpr std::size_t kHighOffset = kCodeBytes;
  static constexpr std::size_t kScOffset = kHighOffset + 8 * 64, kMnOffset = kScOffset + 128;
  static constexpr std::size_t kDOffset = kMnOffset + 128, kDminOffset = kDOffset + 32;
  static constexpr std::size_t kSuperBytes = kDminOffset + 32;  // 2880

  const std::uint8_t* data = nullptr;  // any alignment (64 recommended)
  std::size_t rows = 0, cols = 0;      // cols % 256 == 0

  std::size_t superblocks() const { return cols / 256; }
  std::size_t groups() const { return (rows + kQ5KGroupRows - 1) / kQ5KGroupRows; }
  std::size_t group_bytes() const { return superblocks() * kSuperBytes; }
  std::size_t bytes() const { return groups() * group_bytes(); }
  const std::uint8_t* super(std::size_t g, std::size_t s) const { return data + g * group_bytes() + s * kSuperBytes; }
};

// Bytes of a packed [rows, cols] matrix. Throws ringlm::Error unless rows > 0 and cols is a
// positive multiple of 256.
std::size_t q5k_packed_bytes(std::size_t rows, std::size_t cols);

// Writes row `row` (cols/256 Q5_K blocks) into a packed matrix being built (dst of
// q5k_packed_bytes bytes, zero-initialised). Distinct rows touch distinct bytes.
void q5k_pack_row(const BlockQ5_K* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst);

// The inverse: row `row` as the original Q5_K blocks.
void q5k_unpack_row(const Q5KPacked& w, std::size_t row, BlockQ5_K* out);

}  // namespace ringlm::kernels
