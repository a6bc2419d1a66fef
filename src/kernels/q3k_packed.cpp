#include "kernels/q3k_packed.h"

#include <cstring>

#include "util/error.h"

namespace ringlm::kernels {

namespace {
void check_shape(std::size_t rows, std::size_t cols) {
  if (rows == 0 || cols == 0 || cols % 256 != 0)
    fail("Q3_K pack: shape [", rows, ", ", cols, "] needs rows > 0 and cols a positive multiple of 256");
}

// Q3_K's value v (0..255) of a block: its two low bits (bit pair (v % 128) / 32 of
// qs[32 * (v / 128) + v % 32]) and its high bit (bit v / 32 of hmask[v % 32]).
int low_bits(const BlockQ3_K& b, int v) { return (b.qs[32 * (v / 128) + v % 32] >> (2 * ((v % 128) / 32))) & 3; }
int high_bit(const BlockQ3_K& b, int v) { return (b.hmask[v % 32] >> (v / 32)) & 1; }
}  // namespace

std::size_t q3k_packed_bytes(std::size_t rows, std::size_t cols) {
  check_shape(rows, cols);
  return Q3KPacked{nullptr, rows, cols}.bytes();
}

void q3k_pack_row(const BlockQ3_K* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst) {
  check_shape(rows, cols);
  if (row >= rows) fail("Q3_K pack: row ", row, " out of range (rows ", rows, ")");
  const Q3KPacked w{dst, rows, cols};
  const std::size_t g = row / kQ3KGroupRows, r = row % kQ3KGroupRows;
  for (std::size_t s = 0; s < w.superblocks(); ++s) {
    const BlockQ3_K& blk = blocks[s];
    std::uint8_t* sp = dst + g * w.group_bytes() + s * Q3KPacked::kSuperBytes;
    for (int j = 0; j < 8; ++j) {
      std::uint8_t* bp = sp + j * Q3KPacked::kBlockBytes;
      for (int e = 0; e < 32; ++e) {  // value 32j + e: half e / 16, step t = (e % 16) / 4, byte i = e % 4
        const int v = 32 * j + e, half = e / 16, t = (e % 16) / 4, i = e % 4;
        bp[half * 64 + r * 4 + i] = static_cast<std::uint8_t>(bp[half * 64 + r * 4 + i] | (low_bits(blk, v) << (2 * t)));
        bp[128 + r * 4 + i] = static_cast<std::uint8_t>(bp[128 + r * 4 + i] | (high_bit(blk, v) << (4 * half + t)));
      }
    }
    for (int k = 0; k < 16; ++k) {  // the 6-bit scales (layout in dequant_ggml_more.cpp)
      const int low = k < 8 ? (blk.scales[k] & 0x0f) : (blk.scales[k - 8] >> 4);
      const int high = (blk.scales[8 + k % 4] >> (2 * (k / 4))) & 3;
      sp[Q3KPacked::kScOffset + k * 16 + r] = static_cast<std::uint8_t>(static_cast<std::int8_t>((low | (high << 4)) - 32));
    }
    std::memcpy(sp + Q3KPacked::kDOffset + 2 * r, &blk.d, 2);
  }
}

void q3k_unpack_row(const Q3KPacked& w, std::size_t row, BlockQ3_K* out) {
  if (row >= w.rows) fail("Q3_K unpack: row ", row, " out of range (rows ", w.rows, ")");
  const std::size_t g = row / kQ3KGroupRows, r = row % kQ3KGroupRows;
  for (std::size_t s = 0; s < w.superblocks(); ++s) {
    const std::uint8_t* sp = w.super(g, s);
    BlockQ3_K& blk = out[s];
    std::memset(&blk, 0, sizeof blk);
    std::memcpy(&blk.d, sp + Q3KPacked::kDOffset + 2 * r, 2);
    for (int j = 0; j < 8; ++j) {
      const std::uint8_t* bp = sp + j * Q3KPacked::kBlockBytes;
      for (int e = 0; e < 32; ++e) {
        const int v = 32 * j + e, half = e / 16, t = (e % 16) / 4, i = e % 4;
        const int low = (bp[half * 64 + r * 4 + i] >> (2 * t)) & 3;
        const int high = (bp[128 + r * 4 + i] >> (4 * half + t)) & 1;
        blk.qs[32 * (v / 128) + v % 32] = static_cast<std::uint8_t>(blk.qs[32 * (v / 128) + v % 32] | (low << (2 * ((v % 128) / 32))));
        blk.hmask[v % 32] = static_cast<std::uint8_t>(blk.hmask[v % 32] | (high << (v / 32)));
      }
    }
    for (int k = 0; k < 16; ++k) {  // every bit of the 12 scale bytes is used: they come back unchanged
      const int sc = static_cast<std::int8_t>(sp[Q3KPacked::kScOffset + k * 16 + r]) + 32;
      if (k < 8)
        blk.scales[k] = static_cast<std::uint8_t>(blk.scales[k] | (sc & 0x0f));
      else
        blk.scales[k - 8] = static_cast<std::uint8_t>(blk.scales[k - 8] | ((sc & 0x0f) << 4));
      blk.scales[8 + k % 4] = static_cast<std::uint8_t>(blk.scales[8 + k % 4] | ((sc >> 4) << (2 * (k / 4))));
    }
  }
}

}  // namespace ringlm::kernels
