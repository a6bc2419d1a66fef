#include "kernels/q8p16_packed.h"

#include <cstring>

#include "util/error.h"

namespace ringlm::kernels {

namespace {
void check_shape(std::size_t rows, std::size_t cols) {
  if (rows == 0 || cols == 0 || cols % 32 != 0)
    fail("Q8_0 pack: shape [", rows, ", ", cols, "] needs rows > 0 and cols a positive multiple of 32");
}
}  // namespace

std::size_t q8p16_packed_bytes(std::size_t rows, std::size_t cols) {
  check_shape(rows, cols);
  return Q8P16Packed{nullptr, rows, cols}.bytes();
}

void q8p16_pack_row(const BlockQ8_0* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst) {
  check_shape(rows, cols);
  if (row >= rows) fail("Q8_0 pack: row ", row, " out of range (rows ", rows, ")");
  const Q8P16Packed w{dst, rows, cols};
  const std::size_t g = row / kQ8GroupRows, r = row % kQ8GroupRows;
  for (std::size_t b = 0; b < w.blocks(); ++b) {
    std::uint8_t* bp = dst + g * w.group_bytes() + b * Q8P16Packed::kBlockBytes;
    for (std::size_t t = 0; t < 8; ++t) std::memcpy(bp + t * 64 + r * 4, blocks[b].qs + 4 * t, 4);
    std::memcpy(bp + Q8P16Packed::kDOffset + 2 * r, &blocks[b].d, 2);
  }
}

void q8p16_unpack_row(const Q8P16Packed& w, std::size_t row, BlockQ8_0* out) {
  if (row >= w.rows) fail("Q8_0 unpack: row ", row, " out of range (rows ", w.rows, ")");
  const std::size_t g = row / kQ8GroupRows, r = row % kQ8GroupRows;
  for (std::size_t b = 0; b < w.blocks(); ++b) {
    const std::uint8_t* bp = w.block(g, b);
    for (std::size_t t = 0; t < 8; ++t) std::memcpy(out[b].qs + 4 * t, bp + t * 64 + r * 4, 4);
    std::memcpy(&out[b].d, bp + Q8P16Packed::kDOffset + 2 * r, 2);
  }
}

}  // namespace ringlm::kernels
