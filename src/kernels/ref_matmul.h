// Matrix products over weights kept in their stored dtype (F32, F16 or BF16).
//
// A weight row is converted to float32 once into a small buffer and dotted with every input
// row, so there is never a full float32 copy of a weight and each weight byte is read once
// per call. Work is split over output rows; `pool` may be null (single-threaded).
#pragma once

#include <cstddef>
#include <cstdint>

#include "util/dtype.h"
#include "kernels/ref_parallel.h"

namespace ringlm::kernels {

// How the int8-activation kernels (packed q4_0, GGUF Q8_0/K-quants) treat their input: int8
// (one plane, the fastest), int8x2 (two-plane ~15-bit activations, q8_act.h: ~2x integer work,
// for accuracy; the default) or f32 (each weight row dequantized and dotted in float32 — the
// checking path). A property of each matrix, set by whoever binds it (ModelOptions), so two
// models in one process can run different modes.
enum class Q4Activations { int8, int8x2, f32 };

// A row-major [rows, cols] weight viewed in its stored dtype.
struct WeightMatrix {
  io::DType dtype = io::DType::F32;
  const std::uint8_t* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  // Q4_0: true = the q4p16 layout of q4_packed.h (quantized or repacked at load); Q4_K / Q6_K /
  // Q8_0: true = the q4kp16 / q6kp16 / q8p16 layout of q4k_packed.h / q6k_packed.h /
  // q8p16_packed.h (repacked at load); false = plain ggml blocks as stored in a GGUF file.
  bool packed = false;
  // I8 only: one f32 scale per row, value = row_scales[r] * code (the sidecar's int8 tables).
  const float* row_scales = nullptr;
  // Packed Q4_0 only: run matmul() on the float path (rows dequantized, float32 activations)
  // instead of the w4a8 kernels: `--weights stored` on a converted model directory.
  bool float_path = false;
  Q4Activations activations = Q4Activations::int8x2;  // for the int8-activation kernels
};

// Converts row `r` of `w` to float32 into `out[0..cols)`. I8 needs row_scales.
void load_row_f32(const WeightMatrix& w, std::int64_t r, float* out);

// out[t][r] = sum_c in[t][c] * w[r][c] for t < n_tokens. F32/F16/BF16 rows are read directly;
// packed q4_0 matrices go to the w4a8 kernels (q4_weight_matmul.h) unless float_path is set,
// and Q8_0 / Q4_K / Q5_K / Q6_K matrices (GGUF, plain or repacked) to the int8-activation
// kernels (ggml_weight_matmul.h), unless w.activations is f32; other ggml block rows
// (Q4_1, or any in f32 mode) go through the scalar dequantizer, and I8 rows with row_scales
// are dequantized like block rows. Throws ringlm::Error for I8 without scales.
// `in` has row stride w.cols, `out` row stride w.rows.
void matmul(const WeightMatrix& w, const float* in, int n_tokens, float* out, ParallelFor* pool);

// matmul(*ws[i], in, n_tokens, outs[i], pool) for i < count (count <= 4; all ws with the
// same cols): several matrices over one input (q/k/v, gate/up). When all of them run on the
// w4a8 kernels (with one activation mode) the input is quantized once and they share one parallel call; otherwise they
// run one after the other. Results are those of the separate calls, bit for bit.
void matmul_shared_input(const WeightMatrix* const* ws, float* const* outs, std::size_t count, const float* in,
                         int n_tokens, ParallelFor* pool);

// Selected rows against one input vector (a subset LM head): out[i] = w[rows[i]] . in for
// i < n_rows (rows in [0, w.rows), any order, repeats allowed). Each output uses exactly the
// arithmetic matmul() uses for that row with n_tokens = 1, so it is bit-identical to it.
// Covers F32/F16/BF16 rows, I8 rows with scales, and ggml block rows and packed q4_0 while
// w.activations is f32 (or float_path is set); packed q4_0 on the w4a8 kernels computes
// whole 16-row groups instead (q4_weight_matmul_groups), and Q8_0/K-quant matrices on the
// int8 kernels only run whole: both are refused here.
void matmul_row_list(const WeightMatrix& w, const float* in, const std::int32_t* rows, std::size_t n_rows,
                     float* out, ParallelFor* pool);

// Rows `ids` of an embedding table, converted to float32 and multiplied by `scale`:
// out[t][c] = table[ids[t]][c] * scale. Columns [col_begin, col_begin + n_cols).
void gather_rows(const WeightMatrix& table, const std::int32_t* ids, int n, std::int64_t col_begin,
                 std::int64_t n_cols, float scale, float* out);

}  // namespace ringlm::kernels
