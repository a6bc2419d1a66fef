// "q8p16": the kernels' layout for ggml Q8_0 matrices (GGUF), an exact regrouping of the
// file's blocks in 16-row groups like q4p16, so a SIMD lane owns one output row. A matrix
// W [rows, cols] (cols % 32 == 0) is cut into groups of 16 rows (the last zero-padded);
// group g is cols/32 block stretches of kBlockBytes bytes:
//
//   codes [8 t][16 r][4 B]   bytes qs[4t .. 4t+3] of row r's block (int8 values 4t..4t+3)
//   d     [16 r] fp16
//
// 34 bytes per row and block, as in the file; q8p16_unpack_row recovers the blocks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dequant_blocks.h"

namespace ringlm::kernels {

inline constexpr std::size_t kQ8GroupRows = 16;

struct Q8P16Packed {
  static constexpr std::size_t kDOffset = 8 * 64;                // 512
  static constexpr std::size_t kBlockBytes = kDOffset + 32;      // 544

  const std::uint8_t* data = nullptr;  // any alignment (64 recommended)
  std::size_t rows = 0, cols = 0;      // cols % 32 == 0

  std::size_t blocks() const { return cols / 32; }
  std::size_t groups() const { return (rows + kQ8GroupRows - 1) / kQ8GroupRows; }
  std::size_t group_bytes() const { return blocks() * kBlockBytes; }
  std::size_t bytes() const { return groups() * group_bytes(); }
  const std::uint8_t* block(std::size_t g, std::size_t b) const { return data + g * group_bytes() + b * kBlockBytes; }
};

// Bytes of a packed [rows, cols] matrix. Throws ringlm::Error unless rows > 0 and cols is a
// positive multiple of 32.
std::size_t q8p16_packed_bytes(std::size_t rows, std::size_t cols);

// Writes row `row` (cols/32 Q8_0 blocks) into a packed matrix being built (dst of
// q8p16_packed_bytes bytes, zero-initialised). Distinct rows touch distinct bytes.
void q8p16_pack_row(const BlockQ8_0* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst);

// The inverse: row `row` as the original Q8_0 blocks.
void q8p16_unpack_row(const Q8P16Packed& w, std::size_t row, BlockQ8_0* out);

}  // namespace ringlm::kernels
