// "iq4xsp16": the kernels' layout for ggml IQ4_XS matrices (GGUF), an exact regrouping of the
// file's blocks in 16-row groups like q4kp16 (q4k_packed.h), so a SIMD lane owns one output
// row. A matrix W [rows, cols] (cols % 256 == 0) is cut into groups of 16 rows (the last
// zero-padded); group g is cols/256 super-block stretches of kSuperBytes bytes:
//
//   codes [8 j][4 t][16 r][4 B]  sub-block j (values 32j..32j+31) as the file stores it: byte
//                                 e (0..15) holds value e's 4-bit index in its low nibble and
//                                 value e + 16's in its high nibble; step t = bytes 4t..4t+3
//   sc    [8 j][16 r] int8       the 6-bit sub-block scales minus 32 (ls - 32, -32..31)
//   d     [16 r] fp16
//
// 138 bytes per row and super-block (the file's IQ4_XS: 136). Value = d*(ls-32)*L[index] with
// L = kIq4nlValues, exactly as in the file; iq4xs_unpack_row recovers the blocks byte for byte.
//
// Why a layout of its own rather than a conversion to Q8_0 (what IQ4_XS had before): the
// indices stay 4 bits (half the memory traffic of q8p16, no Q8_0 rounding); the kernels map
// them to levels with one in-register table lookup per 16 rows (iq4xs_kernels_x86_impl.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dequant_blocks.h"

namespace ringlm::kernels {

inline constexpr std::size_t kIq4XsGroupRows = 16;

struct Iq4XsPacked {
  static constexpr std::size_t kCodeBytes = 8 * 256;
  static constexpr std::size_t kScOffset = kCodeBytes;
  static constexpr std::size_t kDOffset = kScOffset + 128;
  static constexpr std::size_t kSuperBytes = kDOffset + 32;  // 2208

  const std::uint8_t* data = nullptr;  // any alignment (64 recommended)
  std::size_t rows = 0, cols = 0;      // cols % 256 == 0

  std::size_t superblocks() const { return cols / 256; }
  std::size_t groups() const { return (rows + kIq4XsGroupRows - 1) / kIq4XsGroupRows; }
  std::size_t group_bytes() const { return superblocks() * kSuperBytes; }
  std::size_t bytes() const { return groups() * group_bytes(); }
  const std::uint8_t* super(std::size_t g, std::size_t s) const { return data + g * group_bytes() + s * kSuperBytes; }
};

// Bytes of a packed [rows, cols] matrix. Throws ringlm::Error unless rows > 0 and cols is a
// positive multiple of 256.
std::size_t iq4xs_packed_bytes(std::size_t rows, std::size_t cols);

// Writes row `row` (cols/256 IQ4_XS blocks) into a packed matrix being built (dst of
// iq4xs_packed_bytes bytes, zero-initialised). Distinct rows touch distinct bytes, so rows
// may be written from several threads.
void iq4xs_pack_row(const BlockIQ4_XS* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst);

// The inverse: row `row` as the original IQ4_XS blocks.
void iq4xs_unpack_row(const Iq4XsPacked& w, std::size_t row, BlockIQ4_XS* out);

}  // namespace ringlm::kernels
