// Test helpers for the ggml-block kernels (ggml_quant_gemm.h): random blocks of each type
// with extreme scales and codes, and an independent float64 decoder of one element (written
// from the format descriptions, not from dequant_ggml.cpp). Used by ggml_kernels_test.cpp
// and the aarch64 cross check.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/ggml_quant_gemm.h"
#include "util/float16.h"

namespace ringlm::kernels::testing {

inline constexpr std::size_t kScaleBytes = 12;

inline void put_fp16(std::uint8_t* p, std::uint16_t h) { std::memcpy(p, &h, 2); }
inline double get_fp16(const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_f32(h);
}

// Random blocks of `type` for a [rows, cols] matrix; every 5th block is extreme (cycled).
inline std::vector<std::uint8_t> random_blocks(GgmlQuant type, std::size_t rows, std::size_t cols, std::mt19937& rng) {
  const std::size_t bb = ggml_quant_block_bytes(type), n = rows * cols / ggml_quant_block_elems(type);
  std::vector<std::uint8_t> data(n * bb);
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> scale(0.0f, 0.01f);
  for (auto& b : data) b = static_cast<std::uint8_t>(byte(rng));
  // Offsets of the fp16 fields (d, and dmin for Q4_K/Q5_K) and of the code bytes.
  const std::size_t d_at = type == GgmlQuant::q6_k ? 208 : type == GgmlQuant::q3_k ? 108 : 0;
  const bool has_min = type == GgmlQuant::q4_k || type == GgmlQuant::q5_k;
  const std::size_t codes_at = type == GgmlQuant::q8_0   ? 2
                               : type == GgmlQuant::q6_k || type == GgmlQuant::q3_k ? 0
                               : type == GgmlQuant::iq4_xs ? 8
                                                           : 4 + kScaleBytes;
  const std::size_t codes_end = type == GgmlQuant::q6_k ? 192 : type == GgmlQuant::q3_k ? 96 : bb;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t* blk = data.data() + i * bb;
    put_fp16(blk + d_at, f32_to_fp16(scale(rng)));
    if (has_min) put_fp16(blk + 2, f32_to_fp16(std::fabs(scale(rng))));
    if (i % 5 != 2) continue;
    switch ((i / 5) % 7) {
      case 0: put_fp16(blk + d_at, 0x0001); break;  // 2^-24
      case 1: put_fp16(blk + d_at, 0x7bff); break;  // 65504
      case 2: put_fp16(blk + d_at, 0xfbff); if (has_min) put_fp16(blk + 2, 0x7bff); break;
      case 3: put_fp16(blk + d_at, 0x0000); break;
      case 4: std::memset(blk + codes_at, 0x00, codes_end - codes_at); break;
      case 5: std::memset(blk + codes_at, 0xff, codes_end - codes_at); break;
      case 6:  // Q8_0: every code -128; K formats: every (sub-block scale, min) at its maximum
        if (type == GgmlQuant::q8_0)
          std::memset(blk + 2, 0x80, 32);
        else if (type == GgmlQuant::q6_k)
          std::memset(blk + 192, 0x80, 16);  // scales -128
        else if (type == GgmlQuant::iq4_xs)
          std::memset(blk + 2, 0x00, 6);  // every ls 0: scale -32
        else if (type == GgmlQuant::q3_k)
          std::memset(blk + 96, 0x00, 12);  // every scale 0: -32
        else
          std::memset(blk + 4, 0xff, kScaleBytes);
        break;
    }
  }
  return data;
}

// The 16 IQ4_NL / IQ4_XS levels (ggml's published kvalues_iq4nl).
inline constexpr int kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Independent float64 decode of one element: value = scale * code - min.
struct Elem {
  double scale, code, min;
};
inline Elem decode(GgmlQuant type, const std::uint8_t* row, std::size_t i) {
  const std::size_t be = ggml_quant_block_elems(type);
  const std::uint8_t* blk = row + i / be * ggml_quant_block_bytes(type);
  const std::size_t v = i % be;
  switch (type) {
    case GgmlQuant::q8_0: return {get_fp16(blk), double(static_cast<std::int8_t>(blk[2 + v])), 0.0};
    case GgmlQuant::q4_k:
    case GgmlQuant::q5_k: {
      const std::uint8_t* s = blk + 4;
      const std::size_t j = v / 32, l = v % 32;
      const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
      const int mn = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
      const std::uint8_t* qs = blk + 16 + (type == GgmlQuant::q5_k ? 32 : 0);
      int code = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
      if (type == GgmlQuant::q5_k) code += ((blk[16 + l] >> j) & 1) * 16;
      return {get_fp16(blk) * sc, double(code), get_fp16(blk + 2) * mn};
    }
    case GgmlQuant::q6_k: {
      const std::size_t half = v / 128, g = v % 128 / 32, l = v % 32;
      const std::uint8_t lo = blk[64 * half + l + 32 * (g % 2)];
      const int code = ((g < 2 ? lo : lo >> 4) & 15) | (((blk[128 + 32 * half + l] >> (2 * g)) & 3) << 4);
      const int sc = static_cast<std::int8_t>(blk[192 + 8 * half + 2 * g + l / 16]);
      return {get_fp16(blk + 208) * sc, double(code - 32), 0.0};
    }
    case GgmlQuant::q3_k: {  // hmask[32], qs[64], scales[12], d
      const std::uint8_t* sc = blk + 96;
      const int low = (blk[32 + 32 * (v / 128) + v % 32] >> (2 * ((v % 128) / 32))) & 3;
      const int high = (blk[v % 32] >> (v / 32)) & 1;
      const std::size_t k = v / 16;
      const int s6 = (k < 8 ? sc[k] & 15 : sc[k - 8] >> 4) | (((sc[8 + k % 4] >> (2 * (k / 4))) & 3) << 4);
      return {get_fp16(blk + 108) * (s6 - 32), double(high ? low : low - 4), 0.0};
    }
    case GgmlQuant::iq4_xs: {  // d, scales_h (u16), scales_l[4], qs[128]
      const std::size_t j = v / 32, l = v % 32;
      const int sh = blk[2] | (blk[3] << 8);
      const int ls = ((blk[4 + j / 2] >> (4 * (j % 2))) & 15) | (((sh >> (2 * j)) & 3) << 4);
      const std::uint8_t q = blk[8 + 16 * j + l % 16];
      return {get_fp16(blk) * (ls - 32), double(kIq4Levels[l < 16 ? q & 15 : q >> 4]), 0.0};
    }
  }
  return {};
}


// float64 value and magnitude (|scale*code| and |min| summed separately: the kernels apply
// them as separate terms) of W[row] . (q8-rounded activation row t of x, both planes).
struct GgmlRef {
  double value = 0, magnitude = 0;
};
inline GgmlRef ref_ggml_dot(GgmlQuant type, const std::uint8_t* wrow, const Q8ActView& x, std::size_t t) {
  GgmlRef r;
  for (std::size_t i = 0; i < x.cols; ++i) {
    const std::size_t b = t * (x.cols / 32) + i / 32;
    double xa = double(x.d[b]) * x.qs[t * x.cols + i];
    if (x.qs2 != nullptr) xa += double(x.d2[b]) * x.qs2[t * x.cols + i];
    const Elem e = decode(type, wrow, i);
    r.value += (e.scale * e.code - e.min) * xa;
    r.magnitude += (std::fabs(e.scale * e.code) + std::fabs(e.min)) * std::fabs(xa);
  }
  return r;
}
inline double ggml_tolerance(const GgmlRef& r, std::size_t cols) {
  return 6e-8 * (4.0 + double(cols / 32)) * r.magnitude + 1e-36;
}

}  // namespace ringlm::kernels::testing
