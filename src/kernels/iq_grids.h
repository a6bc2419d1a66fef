// Codebooks of ggml's IQ2 / IQ3 / IQ1 block formats (dequant_iq.cpp decodes those blocks).
//
// These tables are format constants, not code: a GGUF file stores only indices into them, so
// reading IQ2_XXS ... IQ1_M files at all requires exactly these values. They are the codebooks
// of the published ggml format (ggml-common.h of llama.cpp / ggml, MIT licence), printed into
// ringlm's own files by a throwaway program; tests/io/iq_dequant_test.py checks ringlm's
// decoding of llama-quantize's blocks bit for bit against llama.cpp's own dequantization.
//
// Each entry packs the magnitudes of 8 (uint64, one byte per value, value j in byte j) or
// 4 (uint32) consecutive weights; IQ1's entries are signed bytes in {-1, 0, 1}.
#pragma once

#include <cstdint>

namespace ringlm::kernels {

extern const std::uint64_t kIq2xxsGrid[256];
extern const std::uint64_t kIq2xsGrid[512];
extern const std::uint64_t kIq2sGrid[1024];
extern const std::uint32_t kIq3xxsGrid[256];
extern const std::uint32_t kIq3sGrid[512];
extern const std::uint64_t kIq1sGrid[2048];

// IQ2 / IQ3 sign codes: 7 stored bits, the 8th sign is chosen so that the number of negative
// values in the group is even (the codebook's sign convention).
constexpr std::uint8_t iq_signs_from7(std::uint32_t bits7) {
  std::uint32_t parity = 0;
  for (int b = 0; b < 7; ++b) parity ^= (bits7 >> b) & 1u;
  return static_cast<std::uint8_t>((bits7 & 127u) | (parity << 7));
}

// IQ1_S / IQ1_M: every value is offset by +-1/8 of its scale.
inline constexpr float kIq1Delta = 0.125f;

}  // namespace ringlm::kernels
