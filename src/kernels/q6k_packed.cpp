#include "kernels/q6k_packed.h"

#include <cstring>

#include "util/error.h"

namespace ringlm::kernels {

namespace {

void check_shape(std::size_t rows, std::size_t cols) {
  if (rows == 0 || cols == 0 || cols % 256 != 0)
    fail("Q6_K pack: shape [", rows, ", ", cols, "] needs rows > 0 and cols a positive multiple of 256");
}

// Value v (0..255) of a Q6_K block, 0..63 (layout in dequant_ggml.cpp).
void set_q6_value(BlockQ6_K& b, int v, int q) {
  const int half = v / 128, g = v % 128 / 32, l = v % 32;
  std::uint8_t& lo = b.ql[64 * half + l + 32 * (g & 1)];
  lo |= static_cast<std::uint8_t>((q & 0x0f) << (g < 2 ? 0 : 4));
  b.qh[32 * half + l] |= static_cast<std::uint8_t>((q >> 4) << (2 * g));
}

// Offsets inside a block's kBlockBytes for value e (0..31) of row r.
std::size_t low_at(int e, std::size_t r) { return static_cast<std::size_t>((e % 16) / 4) * 64 + r * 4 + e % 4; }
int low_shift(int e) { return e < 16 ? 0 : 4; }
std::size_t high_at(int e, std::size_t r) {
  const int t = (e % 16) / 4;
  return 256 + static_cast<std::size_t>(t / 2) * 64 + r * 4 + e % 4;
}
int high_shift(int e) { return 4 * (((e % 16) / 4) & 1) + (e < 16 ? 0 : 2); }

}  // namespace

std::size_t q6k_packed_bytes(std::size_t rows, std::size_t cols) {
  check_shape(rows, cols);
  return Q6KPacked{nullptr, rows, cols}.bytes();
}

void q6k_pack_row(const BlockQ6_K* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst) {
  check_shape(rows, cols);
  if (row >= rows) fail("Q6_K pack: row ", row, " out of range (rows ", rows, ")");
  const Q6KPacked w{dst, rows, cols};
  const std::size_t g = row / kQ6KGroupRows, r = row % kQ6KGroupRows;
  for (std::size_t s = 0; s < w.superblocks(); ++s) {
    const BlockQ6_K& blk = blocks[s];
    std::uint8_t* sp = dst + g * w.group_bytes() + s * Q6KPacked::kSuperBytes;
    for (int j = 0; j < 8; ++j) {
      // Block j's 32 values are l = 0..31 of one (half, g) stripe of ql / qh: four at a time
      // as the bytes of 32-bit words (4-bit parts in lw, 2-bit parts in hw).
      const int half = j / 4, g = j % 4;
      const std::uint8_t* ql = blk.ql + 64 * half + 32 * (g & 1);
      const std::uint8_t* qh = blk.qh + 32 * half;
      auto lw = [&](int e) {
        std::uint32_t v;
        std::memcpy(&v, ql + e, 4);
        return (v >> (g < 2 ? 0 : 4)) & 0x0f0f0f0fu;
      };
      auto hw = [&](int e) {
        std::uint32_t v;
        std::memcpy(&v, qh + e, 4);
        return (v >> (2 * g)) & 0x03030303u;
      };
      std::uint8_t* bp = sp + j * Q6KPacked::kBlockBytes;
      for (int t = 0; t < 4; ++t) {
        const std::uint32_t low = lw(4 * t) | (lw(16 + 4 * t) << 4);
        std::memcpy(bp + t * 64 + r * 4, &low, 4);
      }
      for (int u = 0; u < 2; ++u) {
        const std::uint32_t high =
            hw(8 * u) | (hw(16 + 8 * u) << 2) | (hw(8 * u + 4) << 4) | (hw(16 + 8 * u + 4) << 6);
        std::memcpy(bp + 256 + u * 64 + r * 4, &high, 4);
      }
    }
    for (int k = 0; k < 16; ++k) sp[Q6KPacked::kScOffset + k * 16 + r] = static_cast<std::uint8_t>(blk.scales[k]);
    std::memcpy(sp + Q6KPacked::kDOffset + 2 * r, &blk.d, 2);
  }
}

void q6k_unpack_row(const Q6KPacked& w, std::size_t row, BlockQ6_K* out) {
  if (row >= w.rows) fail("Q6_K unpack: row ", row, " out of range (rows ", w.rows, ")");
  const std::size_t g = row / kQ6KGroupRows, r = row % kQ6KGroupRows;
  for (std::size_t s = 0; s < w.superblocks(); ++s) {
    const std::uint8_t* sp = w.super(g, s);
    BlockQ6_K& blk = out[s];
    std::memset(&blk, 0, sizeof blk);
    for (int j = 0; j < 8; ++j) {
      const std::uint8_t* bp = sp + j * Q6KPacked::kBlockBytes;
      for (int e = 0; e < 32; ++e) {
        const int q = ((bp[low_at(e, r)] >> low_shift(e)) & 0x0f) | (((bp[high_at(e, r)] >> high_shift(e)) & 3) << 4);
        set_q6_value(blk, 32 * j + e, q);
      }
    }
    for (int k = 0; k < 16; ++k) blk.scales[k] = static_cast<std::int8_t>(sp[Q6KPacked::kScOffset + k * 16 + r]);
    std::memcpy(&blk.d, sp + Q6KPacked::kDOffset + 2 * r, 2);
  }
}

}  // namespace ringlm::kernels
