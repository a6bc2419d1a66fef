#include "kernels/q5k_packed.h"

#include <cstring>

#include "kernels/dequant_ggml.h"
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
    for (int j = 0; j < 8; ++j) {
      const std::uint8_t* q = blk.qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int t = 0; t < 4; ++t) {  // 4 bytes (values 4t..4t+3 and their +16 partners) at a time
        std::uint32_t lo, hi;
        std::memcpy(&lo, q + 4 * t, 4);
        std::memcpy(&hi, q + 16 + 4 * t, 4);
        const std::uint32_t packed = ((lo >> shift) & 0x0f0f0f0fu) | (((hi >> shift) & 0x0f0f0f0fu) << 4);
        std::memcpy(sp + j * 256 + t * 64 + r * 4, &packed, 4);
      }
      // Value e of sub-block j has its fifth bit in bit j of qh[e].
      for (int i = 0; i < 4; ++i) {
        std::uint8_t b = 0;
        for (int t = 0; t < 4; ++t) {
          b |= static_cast<std::uint8_t>(((blk.qh[4 * t + i] >> j) & 1) << t);
          b |= static_cast<std::uint8_t>(((blk.qh[16 + 4 * t + i] >> j) & 1) << (4 + t));
        }
        sp[Q5KPacked::kHighOffset + j * 64 + r * 4 + i] = b;
      }
      int sc, mn;
      k_scale_min(j, blk.scales, &sc, &mn);
      sp[Q5KPacked::kScOffset + j * 16 + r] = static_cast<std::uint8_t>(sc);
      sp[Q5KPacked::kMnOffset + j * 16 + r] = static_cast<std::uint8_t>(mn);
    }
    std::memcpy(sp + Q5KPacked::kDOffset + 2 * r, &blk.d, 2);
    std::memcpy(sp + Q5KPacked::kDminOffset + 2 * r, &blk.dmin, 2);
  }
}

void q5k_unpack_row(const Q5KPacked& w, std::size_t row, BlockQ5_K* out) {
  if (row >= w.rows) fail("Q5_K unpack: row ", row, " out of range (rows ", w.rows, ")");
  const std::size_t g = row / kQ5KGroupRows, r = row % kQ5KGroupRows;
  for (std::size_t s = 0; s < w.superblocks(); ++s) {
    const std::uint8_t* sp = w.super(g, s);
    BlockQ5_K& blk = out[s];
    std::memcpy(&blk.d, sp + Q5KPacked::kDOffset + 2 * r, 2);
    std::memcpy(&blk.dmin, sp + Q5KPacked::kDminOffset + 2 * r, 2);
    int sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = sp[Q5KPacked::kScOffset + j * 16 + r];
      mn[j] = sp[Q5KPacked::kMnOffset + j * 16 + r];
    }
    // The inverse of k_scale_min: all 96 bits are used, so the bytes come back unchanged.
    for (int j = 0; j < 4; ++j) {
      blk.scales[j] = static_cast<std::uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
      blk.scales[j + 4] = static_cast<std::uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
      blk.scales[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
    std::memset(blk.qs, 0, sizeof blk.qs);
    std::memset(blk.qh, 0, sizeof blk.qh);
    for (int j = 0; j < 8; ++j)
      for (int e = 0; e < 16; ++e) {
        const std::uint8_t b = sp[j * 256 + (e / 4) * 64 + r * 4 + e % 4];
        const int shift = 4 * (j % 2);
        blk.qs[32 * (j / 2) + e] |= static_cast<std::uint8_t>((b & 0x0f) << shift);
        blk.qs[32 * (j / 2) + e + 16] |= static_cast<std::uint8_t>((b >> 4) << shift);
        const std::uint8_t h = sp[Q5KPacked::kHighOffset + j * 64 + r * 4 + e % 4];
        blk.qh[e] |= static_cast<std::uint8_t>(((h >> (e / 4)) & 1) << j);
        blk.qh[e + 16] |= static_cast<std::uint8_t>(((h >> (4 + e / 4)) & 1) << j);
      }
  }
}

}  // namespace ringlm::kernels
