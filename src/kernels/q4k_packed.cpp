#include "kernels/q4k_packed.h"

#include <cstring>

#include "kernels/k_packed_lines.h"
#include "util/error.h"

namespace ringlm::kernels {

namespace {
void check_shape(std::size_t rows, std::size_t cols) {
  if (rows == 0 || cols == 0 || cols % 256 != 0)
    fail("Q4_K pack: shape [", rows, ", ", cols, "] needs rows > 0 and cols a positive multiple of 256");
}
}  // namespace

std::size_t q4k_packed_bytes(std::size_t rows, std::size_t cols) {
  check_shape(rows, cols);
  return Q4KPacked{nullptr, rows, cols}.bytes();
}

void q4k_pack_row(const BlockQ4_K* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst) {
  check_shape(rows, cols);
  if (row >= rows) fail("Q4_K pack: row ", row, " out of range (rows ", rows, ")");
  const Q4KPacked w{dst, rows, cols};
  const std::size_t g = row / kQ4KGroupRows, r = row % kQ4KGroupRows;
  for (std::size_t s = 0; s < w.superblocks(); ++s) {
    const BlockQ4_K& blk = blocks[s];
    std::uint8_t* sp = dst + g * w.group_bytes() + s * Q4KPacked::kSuperBytes;
    k_pack_shared_lines<Q4KPacked>(blk, r, sp);
  }
}

void q4k_unpack_row(const Q4KPacked& w, std::size_t row, BlockQ4_K* out) {
  if (row >= w.rows) fail("Q4_K unpack: row ", row, " out of range (rows ", w.rows, ")");
  const std::size_t g = row / kQ4KGroupRows, r = row % kQ4KGroupRows;
  for (std::size_t s = 0; s < w.superblocks(); ++s) {
    const std::uint8_t* sp = w.super(g, s);
    BlockQ4_K& blk = out[s];
    k_unpack_shared_lines<Q4KPacked>(sp, r, blk);
  }
}

}  // namespace ringlm::kernels
