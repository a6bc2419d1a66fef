// Matmuls over ggml block-quantized rows exactly as a GGUF file stores them (Q8_0, Q4_K,
// Q5_K, Q6_K), with int8 activations (q8_act.h), on the ISA path selected in dispatch.h.
// No repacking: a weight row is its ggml blocks (dequant_blocks.h), read from the mapping.
//
// Numerics (the scalar path, ggml_kernels_scalar.cpp, is the definition; SIMD paths differ
// only in float summation order). Activation block b (32 values) is d_b * q_j; S = integer
// dot of the codes with q over the stated span, exact in int32:
//   Q8_0  y = sum_b  fp16(d_w) * d_b * S_b
//   Q4_K  y = sum_j  (fp16(d) * sc_j) * d_j * S_j  -  (fp16(dmin) * m_j) * d_j * sum(q of block j)
//   Q5_K  the same with 5-bit codes
//   Q6_K  y = sum_b  fp16(d) * d_b * (sc_2b * S_(first 16) + sc_2b+1 * S_(last 16)),  S over (q - 32)
//   IQ4_XS y = sum_j  (fp16(d) * (ls_j - 32)) * d_j * S_j,  S over the levels L[index] (-127..113)
//   Q3_K  y = sum_b  d_b * ((fp16(d) * (s_2b - 32)) * S_(first 16) + (fp16(d) * (s_2b+1 - 32)) * S_(last 16)),
//         S over the signed 3-bit codes (-4..3)
// (the K formats' 32-value sub-blocks line up with the activation blocks; Q6_K's 16-value
// sub-blocks pair up inside one). So each output equals, to float rounding, the dot product
// of the scalar-dequantized weights (dequant_ggml.h) with the q8-rounded activations.
// Two-plane activations add the second plane's dot (scale d2) to each output.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/iq4xs_packed.h"
#include "kernels/q3k_packed.h"
#include "kernels/q4k_packed.h"
#include "kernels/q5k_packed.h"
#include "kernels/q6k_packed.h"
#include "kernels/q8p16_packed.h"
#include "kernels/q8_act.h"
#include "kernels/thread_pool.h"

namespace ringlm::kernels {

// iq4_xs and q3_k run only repacked (iq4xs_matmul, q3k_matmul); ggml_quant_matmul refuses them.
enum class GgmlQuant { q8_0, q4_k, q5_k, q6_k, iq4_xs, q3_k };

const char* ggml_quant_name(GgmlQuant t);
std::size_t ggml_quant_block_elems(GgmlQuant t);  // 32 (Q8_0) or 256 (K formats)
std::size_t ggml_quant_block_bytes(GgmlQuant t);  // 34, 144, 176, 210, 136, 110

// A [rows, cols] matrix of ggml blocks, row-major, cols/block_elems blocks per row.
struct GgmlQuantMatrix {
  GgmlQuant type = GgmlQuant::q8_0;
  const std::uint8_t* data = nullptr;  // any alignment
  std::size_t rows = 0, cols = 0;
  std::size_t row_bytes() const { return cols / ggml_quant_block_elems(type) * ggml_quant_block_bytes(type); }
};

// y[m * ldy + n] = W[n, :] . x[m, :] for n < w.rows, m < x.rows. Rows are split over the pool
// (nullptr: the calling thread). Throws ringlm::Error if cols is not a multiple of the block
// size, w.cols != x.cols or ldy < w.rows.
void ggml_quant_matmul(const GgmlQuantMatrix& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool);

// The same for a Q4_K matrix repacked into q4kp16 (q4k_packed.h): 16 rows per SIMD step like
// the q4_0 kernels, same numerics as the Q4_K line above. 16-row groups are split over the
// pool. Throws ringlm::Error if w.cols != x.cols or ldy < w.rows.
void q4k_matmul(const Q4KPacked& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool);

// The same for a Q6_K matrix repacked into q6kp16 (q6k_packed.h), numerics of the Q6_K line.
void q6k_matmul(const Q6KPacked& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool);

// The same for a Q8_0 matrix repacked into q8p16 (q8p16_packed.h), numerics of the Q8_0 line.
void q8p16_matmul(const Q8P16Packed& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool);

// The same for an IQ4_XS matrix repacked into iq4xsp16 (iq4xs_packed.h), numerics of the
// IQ4_XS line.
void iq4xs_matmul(const Iq4XsPacked& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool);

// The same for a Q3_K matrix repacked into q3kp16 (q3k_packed.h), numerics of the Q3_K line.
void q3k_matmul(const Q3KPacked& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool);

// The same for a Q5_K matrix repacked into q5kp16 (q5k_packed.h), numerics of the Q5_K line.
void q5k_matmul(const Q5KPacked& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool);

}  // namespace ringlm::kernels
