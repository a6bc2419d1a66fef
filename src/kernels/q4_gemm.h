// Public API of the quantized matmul kernels (w4a8: q4_0 weights x int8 activations).
//
// Layouts (details in the headers named):
//   weights      Q4Packed (q4_packed.h): q4_0 [rows = out, cols = in], 16-row groups.
//   activations  Q8ActBuffer / Q8ActView (q8_act.h): int8 per element, f32 scale + int32
//                bias per block of 32.
//   LM head      int8 rows [V, D] + f32 scale per row (the sidecar's embed_tokens.i8 and
//                embed_tokens.scale.f32, used as mapped), or the same matrix as Q4Packed.
//
// Every call runs on the ISA path selected in dispatch.h and splits its output rows over
// the given pool (nullptr = run on the calling thread). No call allocates.
//
// Typical decode step for a linear layer y = W x (x: f32 [cols]):
//   quantize_act(x, 1, cols, cols, act);            // once per distinct input vector
//   q4_matmul(w, act.view(), y, w.rows, pool);        // y: f32 [w.rows]
// Prefill chunk of M tokens (x: f32 [M, cols], row stride ldx):
//   quantize_act(x, M, cols, ldx, act);
//   q4_matmul(w, act.view(), y, ldy, pool);           // y: f32 [M, ldy], ldy >= w.rows
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/q4_packed.h"
#include "kernels/q8_act.h"
#include "kernels/thread_pool.h"

namespace ringlm::kernels {

// y[m * ldy + n] = sum_k W[n, k] * x[m, k] for n < w.rows, m < x.rows (w4a8 numerics, see
// q8_act.h). Weights are read once per call whatever x.rows is (all activation rows are
// applied to a 16-row weight group while it is in cache). Throws ringlm::Error if
// w.cols != x.cols or ldy < w.rows.
void q4_matmul(const Q4Packed& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool);

// int8 rows: y[n] = scale[n] * sum_k W[n, k] * x[k] for n in [0, rows). x in f32.
void i8_gemv_f32(const std::int8_t* w, const float* scale, std::size_t rows, std::size_t cols, const float* x,
                 float* y, ThreadPool* pool);
// The same with x quantized (x.rows >= 1; row 0 is used; x.cols == cols).
void i8_gemv_q8(const std::int8_t* w, const float* scale, std::size_t rows, std::size_t cols, const Q8ActView& x,
                float* y, ThreadPool* pool);

}  // namespace ringlm::kernels
