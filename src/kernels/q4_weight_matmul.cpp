#include "kernels/q4_weight_matmul.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/q4_gemm.h"
#include "kernels/q4_lattice.h"
#include "kernels/kernel_table.h"
#include "kernels/q4_packed.h"
#include "kernels/work_split.h"
#include "util/error.h"

namespace ringlm::kernels {

namespace {
Q4Packed packed_view(const WeightMatrix& w) {
  return {w.data, static_cast<std::size_t>(w.rows), static_cast<std::size_t>(w.cols)};
}

// Rows [16 g0, 16 g1) of every token's output times their power-of-two row factors
// (q4_lattice.h): a lattice-exact matrix whose scales fp16 could not hold directly.
void apply_row_factors(const WeightMatrix& w, std::size_t g0, std::size_t g1, int n_tokens, float* out) {
  if (!w.row_scales) return;
  const std::size_t rows = static_cast<std::size_t>(w.rows);
  const std::size_t r1 = std::min(rows, g1 * kQ4GroupRows);
  for (int t = 0; t < n_tokens; ++t)
    for (std::size_t r = g0 * kQ4GroupRows; r < r1; ++r) out[static_cast<std::size_t>(t) * rows + r] *= w.row_scales[r];
}
}  // namespace

void q4_weight_matmul(const WeightMatrix& w, const float* in, int n_tokens, float* out) {
  thread_local Q8ActBuffer act;
  quantize_act(in, static_cast<std::size_t>(n_tokens), static_cast<std::size_t>(w.cols),
               static_cast<std::size_t>(w.cols), act, w.activations == Q4Activations::int8x2, &default_thread_pool());
  const Q4Packed packed = packed_view(w);
  q4_matmul(packed, act.view(), out, static_cast<std::size_t>(w.rows), &default_thread_pool());
  apply_row_factors(w, 0, packed.groups(), n_tokens, out);
}

void q4_weight_matmul_shared(const WeightMatrix* const* ws, float* const* outs, std::size_t count, const float* in,
                             int n_tokens) {
  constexpr std::size_t kMax = 4;
  if (count == 0) return;
  if (count > kMax) fail("q4_weight_matmul_shared: ", count, " matrices (at most ", kMax, ")");
  Q4Packed packed[kMax];
  std::size_t first_group[kMax + 1] = {0};
  for (std::size_t i = 0; i < count; ++i) {
    if (ws[i]->cols != ws[0]->cols)
      fail("q4_weight_matmul_shared: matrices with ", ws[0]->cols, " and ", ws[i]->cols, " input features");
    packed[i] = packed_view(*ws[i]);
    first_group[i + 1] = first_group[i] + packed[i].groups();
  }
  thread_local Q8ActBuffer act;
  quantize_act(in, static_cast<std::size_t>(n_tokens), static_cast<std::size_t>(ws[0]->cols),
               static_cast<std::size_t>(ws[0]->cols), act, ws[0]->activations == Q4Activations::int8x2,
               &default_thread_pool());
  Q8ActView x = act.view();
  const KernelTable& k = active_kernels();
  if (n_tokens >= 2 && k.prepack_act != nullptr) x.tile_pack = k.prepack_act(x, &default_thread_pool());  // see Q8ActView::tile_pack
  // Groups [g0, g1) of the concatenation, cut at matrix boundaries.
  auto run = [&](std::size_t g0, std::size_t g1, std::size_t) {
    for (std::size_t i = 0; i < count && g0 < g1; ++i) {
      if (g0 >= first_group[i + 1]) continue;
      const std::size_t end = std::min(g1, first_group[i + 1]);
      k.q4_matmul_groups(packed[i], g0 - first_group[i], end - first_group[i], x, outs[i],
                         static_cast<std::size_t>(ws[i]->rows));
      apply_row_factors(*ws[i], g0 - first_group[i], end - first_group[i], n_tokens, outs[i]);
      g0 = end;
    }
  };
  ThreadPool& pool = default_thread_pool();
  // Up to kStealMaxRows rows (decode, verify, small batches): balanced by stealing
  // (work_split.h); more rows keep the even split.
  if (static_cast<std::size_t>(n_tokens) <= kStealMaxRows)
    parallel_for_stealing(pool, first_group[count],
                          gemv_chunk_groups(first_group[count], Q4Packed::group_bytes(packed[0].cols), pool.size()), run);
  else
    pool.parallel_for(first_group[count], std::move(run));
}

void q4_weight_matmul_groups(const WeightMatrix& w, const float* in, const std::uint32_t* groups,
                             std::size_t n_groups, float* out) {
  const Q4Packed packed = packed_view(w);
  for (std::size_t i = 0; i < n_groups; ++i)
    if (groups[i] >= packed.groups())
      fail("q4_weight_matmul_groups: group ", groups[i], " of a matrix with ", packed.groups(), " groups");
  if (n_groups == 0) return;
  thread_local Q8ActBuffer act;
  quantize_act(in, 1, static_cast<std::size_t>(w.cols), static_cast<std::size_t>(w.cols), act,
               w.activations == Q4Activations::int8x2);
  const Q8ActView x = act.view();
  const KernelTable& k = active_kernels();
  const std::size_t ldy = static_cast<std::size_t>(w.rows);
  // Consecutive groups go to the kernel as one range, so it streams them as the full matmul
  // does (a group's result does not depend on the range it is computed in).
  auto run = [&](std::size_t b, std::size_t e, std::size_t) {
    for (std::size_t i = b; i < e;) {
      std::size_t j = i + 1;
      while (j < e && groups[j] == groups[j - 1] + 1) ++j;
      k.q4_matmul_groups(packed, groups[i], groups[j - 1] + 1, x, out, ldy);
      apply_row_factors(w, groups[i], groups[j - 1] + 1, 1, out);
      i = j;
    }
  };
  // A group is 16 x cols weights; below ~64 of them the pool's hand-off costs more than it saves.
  if (n_groups < 64) run(0, n_groups, 0);
  else default_thread_pool().parallel_for(n_groups, [&](std::size_t b, std::size_t e, std::size_t p) { run(b, e, p); });
}

void q4_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  thread_local std::vector<BlockQ4_0> blocks;
  const std::size_t nb = static_cast<std::size_t>(w.cols) / kQBlock;
  if (blocks.size() < nb) blocks.resize(nb);
  q4_unpack_row(packed_view(w), static_cast<std::size_t>(r), blocks.data());
  dequantize_row_q4_0(blocks.data(), out, static_cast<std::size_t>(w.cols));
  if (w.row_scales) scale_outputs(out, static_cast<std::size_t>(w.cols), w.row_scales[r]);
}

}  // namespace ringlm::kernels
