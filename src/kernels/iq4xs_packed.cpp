#include "kernels/iq4xs_packed.h"

#include <cstring>

#include "util/error.h"

namespace ringlm::kernels {

namespace {
void check_shape(std::size_t rows, std::size_t cols) {
  if (rows == 0 || cols == 0 || cols % 256 != 0)
    fail("IQ4_XS pack: shape [", rows, ", ", cols, "] needs rows > 0 and cols a positive multiple of 256");
}
}  // namespace

std::size_t iq4xs_packed_bytes(std::size_t rows, std::size_t cols) {
  check_shape(rows, cols);
  return Iq4XsPacked{nullptr, rows, cols}.bytes();
}

void iq4xs_pack_row(const BlockIQ4_XS* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst) {
  check_shape(rows, cols);
  if (row >= rows) fail("IQ4_XS pack: row ", row, " out of range (rows ", rows, ")");
  const Iq4XsPacked w{dst, rows, cols};
  const std::size_t g = row / kIq4XsGroupRows, r = row % kIq4XsGroupRows;
  for (std::size_t s = 0; s < w.superblocks(); ++s) {
    const BlockIQ4_XS& blk = blocks[s];
    std::uint8_t* sp = dst + g * w.group_bytes() + s * Iq4XsPacked::kSuperBytes;
    for (int j = 0; j < 8; ++j) {
      for (int t = 0; t < 4; ++t) std::memcpy(sp + j * 256 + t * 64 + r * 4, blk.qs + 16 * j + 4 * t, 4);
      const int ls = ((blk.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((blk.scales_h >> (2 * j)) & 3) << 4);
      sp[Iq4XsPacked::kScOffset + j * 16 + r] = static_cast<std::uint8_t>(static_cast<std::int8_t>(ls - 32));
    }
    std::memcpy(sp + Iq4XsPacked::kDOffset + 2 * r, &blk.d, 2);
  }
}

void iq4xs_unpack_row(const Iq4XsPacked& w, std::size_t row, BlockIQ4_XS* out) {
  if (row >= w.rows) fail("IQ4_XS unpack: row ", row, " out of range (rows ", w.rows, ")");
  const std::size_t g = row / kIq4XsGroupRows, r = row % kIq4XsGroupRows;
  for (std::size_t s = 0; s < w.superblocks(); ++s) {
    const std::uint8_t* sp = w.super(g, s);
    BlockIQ4_XS& blk = out[s];
    std::memcpy(&blk.d, sp + Iq4XsPacked::kDOffset + 2 * r, 2);
    blk.scales_h = 0;
    std::memset(blk.scales_l, 0, sizeof blk.scales_l);
    for (int j = 0; j < 8; ++j) {
      for (int t = 0; t < 4; ++t) std::memcpy(blk.qs + 16 * j + 4 * t, sp + j * 256 + t * 64 + r * 4, 4);
      const int ls = static_cast<std::int8_t>(sp[Iq4XsPacked::kScOffset + j * 16 + r]) + 32;
      blk.scales_l[j / 2] = static_cast<std::uint8_t>(blk.scales_l[j / 2] | ((ls & 0x0f) << (4 * (j % 2))));
      blk.scales_h = static_cast<std::uint16_t>(blk.scales_h | ((ls >> 4) << (2 * j)));
    }
  }
}

}  // namespace ringlm::kernels
