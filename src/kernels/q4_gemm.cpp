#include "kernels/q4_gemm.h"

#include <utility>

#include "kernels/kernel_table.h"
#include "kernels/work_split.h"
#include "util/error.h"

namespace ringlm::kernels {

namespace {
// Rows of int8 LM-head work handed out per unit: enough to amortise the split.
constexpr std::size_t kI8RowsPerUnit = 64;
}  // namespace

void q4_matmul(const Q4Packed& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool) {
  if (w.cols != x.cols) fail("q4_matmul: weight has ", w.cols, " input features, activations ", x.cols);
  if (ldy < w.rows) fail("q4_matmul: output row stride ", ldy, " < weight rows ", w.rows);
  const KernelTable& k = active_kernels();
  if (pool == nullptr) return k.q4_matmul_groups(w, 0, w.groups(), x, y, ldy);
  Q8ActView xs = x;
  if (x.rows >= 2 && k.prepack_act != nullptr && x.tile_pack == nullptr) xs.tile_pack = k.prepack_act(x, pool);
  auto run = [&](std::size_t g0, std::size_t g1, std::size_t) { k.q4_matmul_groups(w, g0, g1, xs, y, ldy); };
  // Up to kStealMaxRows rows (decode, verify, small batches): balanced by stealing
  // (work_split.h); more rows keep the even split.
  if (x.rows <= kStealMaxRows)
    parallel_for_stealing(*pool, w.groups(), gemv_chunk_groups(w.groups(), Q4Packed::group_bytes(w.cols), pool->size()), run);
  else
    pool->parallel_for(w.groups(), std::move(run));
}

void i8_gemv_f32(const std::int8_t* w, const float* scale, std::size_t rows, std::size_t cols, const float* x,
                 float* y, ThreadPool* pool) {
  const KernelTable& k = active_kernels();
  if (pool == nullptr) return k.i8_gemv_f32(w, scale, cols, 0, rows, x, y);
  const std::size_t units = (rows + kI8RowsPerUnit - 1) / kI8RowsPerUnit;
  pool->parallel_for(units, [&](std::size_t u0, std::size_t u1, std::size_t) {
    const std::size_t r1 = u1 * kI8RowsPerUnit < rows ? u1 * kI8RowsPerUnit : rows;
    k.i8_gemv_f32(w, scale, cols, u0 * kI8RowsPerUnit, r1, x, y);
  });
}

void i8_gemv_q8(const std::int8_t* w, const float* scale, std::size_t rows, std::size_t cols, const Q8ActView& x,
                float* y, ThreadPool* pool) {
  if (x.cols != cols || x.rows < 1) fail("i8_gemv_q8: activation shape [", x.rows, ", ", x.cols, "] for ", cols, " columns");
  const KernelTable& k = active_kernels();
  if (pool == nullptr) return k.i8_gemv_q8(w, scale, cols, 0, rows, x, y);
  const std::size_t units = (rows + kI8RowsPerUnit - 1) / kI8RowsPerUnit;
  pool->parallel_for(units, [&](std::size_t u0, std::size_t u1, std::size_t) {
    const std::size_t r1 = u1 * kI8RowsPerUnit < rows ? u1 * kI8RowsPerUnit : rows;
    k.i8_gemv_q8(w, scale, cols, u0 * kI8RowsPerUnit, r1, x, y);
  });
}

}  // namespace ringlm::kernels
