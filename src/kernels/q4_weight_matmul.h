// Glue between the model's WeightMatrix (ref_matmul.h) and the w4a8 kernels: a WeightMatrix
// with dtype io::DType::Q4_0 points at a q4p16-packed matrix (q4_packed.h) of rows x cols.
// ref_matmul's matmul() and load_row_f32() forward such matrices here, so the model's
// forward pass runs unchanged on quantized weights.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ref_matmul.h"

namespace ringlm::kernels {

// The activation mode (int8 or int8x2) is each matrix's own: WeightMatrix::activations. The
// shared form takes it from ws[0] (matmul_shared_input only groups matrices that agree).

// out[t][r] = W[r, :] . in[t, :] for t < n_tokens (out row stride w.rows), on the default
// thread pool. Keeps one quantized-activation buffer per calling thread (grown, never shrunk).
void q4_weight_matmul(const WeightMatrix& w, const float* in, int n_tokens, float* out);

// q4_weight_matmul(*ws[i], in, n_tokens, outs[i]) for i < count (all ws with the same cols),
// with the input quantized once and one pool call over the groups of all matrices, instead
// of one per matrix: one hand-off and one wait per step for q/k/v or gate/up. Each output
// is bit-identical to its separate call.
void q4_weight_matmul_shared(const WeightMatrix* const* ws, float* const* outs, std::size_t count, const float* in,
                             int n_tokens);

// Only some 16-row groups of W . in, for one input vector (a subset LM head): the same
// activation quantization and kernel as q4_weight_matmul() with n_tokens = 1, so every row
// computed is bit-identical to its output there. Writes out[r] (out: w.rows floats, as for
// q4_weight_matmul) for the real rows r of groups[0..n_groups) (group g: rows [16g, 16g+16);
// any order, no repeats) and nothing else. Throws ringlm::Error for a group past the matrix.
void q4_weight_matmul_groups(const WeightMatrix& w, const float* in, const std::uint32_t* groups,
                             std::size_t n_groups, float* out);

// Row r of a packed q4_0 WeightMatrix, dequantized.
void q4_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out);

}  // namespace ringlm::kernels
