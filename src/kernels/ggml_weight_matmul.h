// Glue between the model's WeightMatrix (ref_matmul.h) and ggml_quant_gemm.h: a matrix of
// plain ggml Q8_0 / Q4_K / Q5_K / Q6_K blocks, as a GGUF file stores it, or a Q4_K / Q6_K /
// Q8_0 / IQ4_XS / Q3_K / Q5_K matrix repacked at load (WeightMatrix::packed: q4k_packed.h /
// q6k_packed.h / q8p16_packed.h / iq4xs_packed.h / q3k_packed.h / q5k_packed.h) runs on the int8-activation kernels. ref_matmul's matmul() forwards such matrices here unless the
// activation mode (q4_weight_matmul.h, shared with the q4_0 kernels) is f32.
#pragma once

#include <optional>

#include "util/dtype.h"
#include "kernels/ggml_quant_gemm.h"
#include "kernels/ref_matmul.h"

namespace ringlm::kernels {

// The kernel type of a storage dtype, or nullopt when there is no direct kernel for it.
std::optional<GgmlQuant> ggml_quant_of(io::DType t);

// out[t][r] = W[r, :] . in[t, :] for t < n_tokens (out row stride w.rows), on the default
// thread pool, activations quantized per w.activations (int8 or int8x2). Keeps one
// quantized-activation buffer per calling thread (grown, never shrunk).
void ggml_weight_matmul(const WeightMatrix& w, const float* in, int n_tokens, float* out);

// Row r of a repacked (q4kp16 / q6kp16 / q8p16) Q4_K / Q6_K / Q8_0 WeightMatrix, dequantized exactly as the
// file's blocks.
void q4k_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out);
void q6k_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out);
void q8p16_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out);
void iq4xs_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out);  // iq4xsp16
void q3k_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out);    // q3kp16
void q5k_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out);    // q5kp16

}  // namespace ringlm::kernels
