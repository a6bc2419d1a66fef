// The lines q4kp16 (q4k_packed.h) and q5kp16 (q5k_packed.h) share: the low-nibble code lines,
// the 6-bit scale and min lines and the fp16 d / dmin lines of one row's super-block. The two
// layouts differ only in where those lines start (Q5_K puts its fifth-bit line before the
// scales), so the packers and unpackers of both call these, templated on the layout for its
// offsets, and add only what is their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/dequant_ggml.h"

namespace ringlm::kernels {

// Writes row r's part of one super-block stretch sp from a ggml K block (d, dmin, scales, qs).
template <class Packed, class Block>
inline void k_pack_shared_lines(const Block& blk, std::size_t r, std::uint8_t* sp) {
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
    int sc, mn;
    k_scale_min(j, blk.scales, &sc, &mn);
    sp[Packed::kScOffset + j * 16 + r] = static_cast<std::uint8_t>(sc);
    sp[Packed::kMnOffset + j * 16 + r] = static_cast<std::uint8_t>(mn);
  }
  std::memcpy(sp + Packed::kDOffset + 2 * r, &blk.d, 2);
  std::memcpy(sp + Packed::kDminOffset + 2 * r, &blk.dmin, 2);
}

// The inverse: fills blk's d, dmin, scales and qs (qs cleared first) from row r of sp.
template <class Packed, class Block>
inline void k_unpack_shared_lines(const std::uint8_t* sp, std::size_t r, Block& blk) {
  std::memcpy(&blk.d, sp + Packed::kDOffset + 2 * r, 2);
  std::memcpy(&blk.dmin, sp + Packed::kDminOffset + 2 * r, 2);
  int sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = sp[Packed::kScOffset + j * 16 + r];
    mn[j] = sp[Packed::kMnOffset + j * 16 + r];
  }
  // The inverse of k_scale_min: all 96 bits are used, so the bytes come back unchanged.
  for (int j = 0; j < 4; ++j) {
    blk.scales[j] = static_cast<std::uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    blk.scales[j + 4] = static_cast<std::uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    blk.scales[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
  std::memset(blk.qs, 0, sizeof blk.qs);
  for (int j = 0; j < 8; ++j)
    for (int e = 0; e < 16; ++e) {
      const std::uint8_t b = sp[j * 256 + (e / 4) * 64 + r * 4 + e % 4];
      const int shift = 4 * (j % 2);
      blk.qs[32 * (j / 2) + e] |= static_cast<std::uint8_t>((b & 0x0f) << shift);
      blk.qs[32 * (j / 2) + e + 16] |= static_cast<std::uint8_t>((b >> 4) << shift);
    }
}

}  // namespace ringlm::kernels
