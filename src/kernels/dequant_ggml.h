// Scalar reference (de)quantization for the tensor types ringlm reads from GGUF files.
// These are the ground truth the fast kernels are tested against and the path used to
// repack or upcast weights at load time; they are not meant for the decode hot loop.
#pragma once

#include <cstdint>

#include "util/dtype.h"
#include "kernels/dequant_blocks.h"

namespace ringlm::kernels {

// How a type packs values: `block_elems` values occupy `block_bytes` bytes.
struct BlockFormat {
  std::int64_t block_elems;
  std::int64_t block_bytes;
};
BlockFormat block_format(io::DType t);

// Row sizes in bytes; n must be a multiple of the block size (checked by the callers that
// build tensor views: the GGUF reader rejects rows that are not).
inline std::int64_t row_bytes(io::DType t, std::int64_t n) {
  const BlockFormat f = block_format(t);
  return n / f.block_elems * f.block_bytes;
}

// Decodes n values of type t (n a multiple of the block size) from src into dst.
void dequantize_row(io::DType t, const void* src, float* dst, std::int64_t n);
// Encodes n floats as type t. The quantizers are simple and deterministic (not ggml's
// error-minimising search); they exist to write test and converted files.
void quantize_row(io::DType t, const float* src, void* dst, std::int64_t n);

void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, std::int64_t n);
void dequantize_row_q4_0(const BlockQ4_0* src, float* dst, std::int64_t n);
void dequantize_row_q4_1(const BlockQ4_1* src, float* dst, std::int64_t n);
void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, std::int64_t n);
void dequantize_row_q5_k(const BlockQ5_K* src, float* dst, std::int64_t n);
void dequantize_row_q6_k(const BlockQ6_K* src, float* dst, std::int64_t n);
// dequant_ggml_more.cpp: types read from GGUF files only (no quantizer, float path).
void dequantize_row_q5_0(const BlockQ5_0* src, float* dst, std::int64_t n);
void dequantize_row_q5_1(const BlockQ5_1* src, float* dst, std::int64_t n);
void dequantize_row_q2_k(const BlockQ2_K* src, float* dst, std::int64_t n);
void dequantize_row_q3_k(const BlockQ3_K* src, float* dst, std::int64_t n);
void dequantize_row_iq4_nl(const BlockIQ4_NL* src, float* dst, std::int64_t n);
void dequantize_row_iq4_xs(const BlockIQ4_XS* src, float* dst, std::int64_t n);
// dequant_iq.cpp: the codebook formats (GGUF input only, bit-identical to ggml's decoder).
void dequantize_row_iq2_xxs(const BlockIQ2_XXS* src, float* dst, std::int64_t n);
void dequantize_row_iq2_xs(const BlockIQ2_XS* src, float* dst, std::int64_t n);
void dequantize_row_iq2_s(const BlockIQ2_S* src, float* dst, std::int64_t n);
void dequantize_row_iq3_xxs(const BlockIQ3_XXS* src, float* dst, std::int64_t n);
void dequantize_row_iq3_s(const BlockIQ3_S* src, float* dst, std::int64_t n);
void dequantize_row_iq1_s(const BlockIQ1_S* src, float* dst, std::int64_t n);
void dequantize_row_iq1_m(const BlockIQ1_M* src, float* dst, std::int64_t n);
// IQ1_M keeps its fp16 super-block scale in the top nibbles of its four scale words.
std::uint16_t iq1m_block_scale(const BlockIQ1_M& b);

void quantize_row_q8_0(const float* src, BlockQ8_0* dst, std::int64_t n);
void quantize_row_q4_0(const float* src, BlockQ4_0* dst, std::int64_t n);
void quantize_row_q4_1(const float* src, BlockQ4_1* dst, std::int64_t n);
void quantize_row_q4_k(const float* src, BlockQ4_K* dst, std::int64_t n);
void quantize_row_q5_k(const float* src, BlockQ5_K* dst, std::int64_t n);
void quantize_row_q6_k(const float* src, BlockQ6_K* dst, std::int64_t n);

// Unpacks sub-block j's 6-bit scale and min from the 12 packed bytes of Q4_K / Q5_K.
inline void k_scale_min(int j, const std::uint8_t* packed, int* scale, int* min) {
  if (j < 4) {
    *scale = packed[j] & 63;
    *min = packed[j + 4] & 63;
  } else {
    *scale = (packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4);
    *min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

}  // namespace ringlm::kernels
