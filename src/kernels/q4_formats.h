// Block quantization formats on the ggml grid, and their scalar reference quantizers.
//
//   q4_0  32 weights per block, one fp16 scale d, 4-bit codes c in [0, 15]: w = d * (c - 8).
//         Byte j of qs holds element j in its low nibble and element j + 16 in its high
//         nibble (ggml's order, so GGUF q4_0 tensors are read as they are).
//   q8_0  32 int8 codes per block, one fp16 scale d: x = d * q.
//   i8 rows  one f32 scale per row, int8 codes in [-127, 127]: x = scale * q
//         (the sidecar's embed_tokens.i8 / embed_per_layer.i8 convention).
//
// These are the storage formats. The kernels use their own in-memory layouts
// (q4_packed.h for weights, q8_act.h for activations), converted from these.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dequant_blocks.h"  // BlockQ4_0, BlockQ8_0: the ggml storage blocks

namespace ringlm::kernels {

inline constexpr std::size_t kQBlock = 32;  // elements per quantization block (q4_0, q8_0)

static_assert(sizeof(BlockQ4_0) == 18, "q4_0 block must match ggml's 18 bytes");

static_assert(sizeof(BlockQ8_0) == 34, "q8_0 block must match ggml's 34 bytes");

// ggml's q4_0 reference rounding. Per block: m = the signed value of the first element
// with the largest magnitude, d = m / -8 (so that element maps to code 0, i.e. -8),
// id = 1/d (0 when d == 0), code = min(15, trunc(x * id + 8.5)). The fp16 scale stored is
// round-to-nearest-even of d, but the codes are computed with the float d (as ggml does).
// k must be a multiple of 32. Non-finite inputs give unspecified codes.
void quantize_row_q4_0_ref(const float* x, BlockQ4_0* y, std::size_t k);
// The same rule, bit-identical, on the fastest path the CPU has (AVX-512 when the active
// kernel path is avx512 or avx512vnni, else the reference loop): load-time quantization.
void quantize_row_q4_0_fast(const float* x, BlockQ4_0* y, std::size_t k);
#if defined(__x86_64__)
void quantize_row_q4_0_avx512(const float* x, BlockQ4_0* y, std::size_t k);
#endif
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, std::size_t k);

// q8_0: d = amax / 127, id = 1/d (0 when amax == 0), q = round-half-even(x * id).
// (ggml's scalar code rounds halves away from zero, its SIMD code to even; we pick even
// everywhere so the fast quantizer is bit-identical to this one.)
void quantize_row_q8_0_ref(const float* x, BlockQ8_0* y, std::size_t k);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, std::size_t k);

// int8 row with one f32 scale: scale = amax / 127, q = clamp(round-half-even(x / scale),
// -127, 127); an all-zero row gets scale 0. Returns the scale.
float quantize_row_i8(const float* x, std::int8_t* q, std::size_t k);
void dequantize_row_i8(const std::int8_t* q, float scale, float* y, std::size_t k);

}  // namespace ringlm::kernels
