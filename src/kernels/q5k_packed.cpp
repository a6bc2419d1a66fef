#include "kernels/q5k_packed.h"

#include <cstring>

#include "kernels/k_packed_lines.h"
#include "util/error.h"

namespace ringlm::kernels {

namespace {
void check_shape(std::size_t rows, std::size_t cols) {
  if (rows == 0 || cols == 0 || cols % 256 != 0)
    fail("Q5_K pack: shape [", rows, ", ", cols, "] needs rows > 0 and cols a positive multiple of 256");
}
}  // namespace

std::size_t q5k_packed_bytes(std::size_t rows, std::size_t cols) {
  check_shape(rows, cols);
  return Q5KPacked{nullptr, rows, cols}.bytes();
}

void q5k_pack_row(const BlockQ5_K* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst) {
  check_shape(rows, cols);
  if (row >= rows) fail("Q5_K pack: row ", row, " out of range (rows ", rows, ")");
  const Q5KPacked w{dst, rows, cols};
  const std::size_t g = row / kQ5KGroupRows, r = row % kQ5KGroupRows;
  for (std::size_t s = 0; s < w.superblocks(); ++s) {
    const BlockQ5_K& blk = blocks[s];
    std::uint8_t* sp = dst + g * w.group_bytes() + s * Q5KPacked::kSuperBytes;
    k_pack_shared_lines<Q5KPacked>(blk, r, sp);
    // Value e of sub-block j has its fifth bit in bit j of qh[e].
    for (int j = 0; j < 8; ++j)
      for (int i = 0; i < 4; ++i) {
        std::uint8_t b = 0;
        for (int t = 0; t < 4; ++t) {
          b |= static_cast<std::uint8_t>(((blk.qh[4 * t + i] >> j) & 1) << t);
          b |= static_cast<std::uint8_t>(((blk.qh[16 + 4 * t + i] >> j) & 1) << (4 + t));
        }
        sp[Q5KPacked::kHighOffset + j * 64 + r * 4 + i] = b;
      }
  }
}

void q5k_unpack_row(const Q5KPacked& w, std::size_t row, BlockQ5_K* out) {
  if (row >= w.rows) fail("Q5_K unpack: row ", row, " out of range (rows ", w.rows, ")");
  const std::size_t g = row / kQ5KGroupRows, r = row % kQ5KGroupRows;
  for (std::size_t s = 0; s < w.superblocks(); ++s) {
    const std::uint8_t* sp = w.super(g, s);
    BlockQ5_K& blk = out[s];
    k_unpack_shared_lines<Q5KPacked>(sp, r, blk);
    std::memset(blk.qh, 0, sizeof blk.qh);
    for (int j = 0; j < 8; ++j)
      for (int e = 0; e < 16; ++e) {
        const std::uint8_t h = sp[Q5KPacked::kHighOffset + j * 64 + r * 4 + e % 4];
        blk.qh[e] |= static_cast<std::uint8_t>(((h >> (e / 4)) & 1) << j);
        blk.qh[e + 16] |= static_cast<std::uint8_t>(((h >> (4 + e / 4)) & 1) << j);
      }
  }
}

}  // namespace ringlm::kernels
