#include "model/greedy_head.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/q4_packed.h"
#include "kernels/ref_ops.h"
#include "util/error.h"

namespace ringlm::model {

bool greedy_head_applies(const kernels::WeightMatrix& head) {
  return head.dtype == io::DType::Q4_0 && head.packed && !head.float_path &&
         head.activations == kernels::Q4Activations::int8x2 && head.cols % 32 == 0;
}

GreedyHeadBounds make_greedy_head_bounds(const kernels::WeightMatrix& head, kernels::ParallelFor* pool) {
  if (!greedy_head_applies(head)) fail("greedy head: the LM head is not packed q4_0 on int8x2 activations");
  GreedyHeadBounds b;
  b.n_b.assign(static_cast<std::size_t>(head.cols / 32), 0.0);
  const kernels::Q4Packed w{head.data, static_cast<std::size_t>(head.rows), static_cast<std::size_t>(head.cols)};
  kernels::q4_head_bounds(w, b.n_b.data(), &b.rows, pool);
  return b;
}

GreedyHead::GreedyHead(const kernels::WeightMatrix& head, float softcap, const GreedyHeadBounds& bounds, int max_rows,
                       std::size_t max_groups)
    : head_(head), one_plane_(head), softcap_(softcap), bounds_(&bounds), exact_(head, softcap) {
  if (!greedy_head_applies(head)) fail("greedy head: the LM head is not packed q4_0 on int8x2 activations");
  if (bounds.n_b.size() != static_cast<std::size_t>(head.cols / 32)) fail("greedy head: bounds of another matrix");
  if (max_rows < 1) fail("greedy head: at least one row per run, got ", max_rows);
  one_plane_.activations = kernels::Q4Activations::int8;
  const std::size_t V = static_cast<std::size_t>(head.rows);
  const std::size_t groups = (V + kernels::kQ4GroupRows - 1) / kernels::kQ4GroupRows;
  max_groups_ = std::min(groups, max_groups > 0 ? max_groups : std::max<std::size_t>(1, groups / 16));
  max_rows_ = max_rows;
  scans_.resize(static_cast<std::size_t>(max_rows));
  ids_.resize(static_cast<std::size_t>(max_rows) * max_groups_ * kernels::kQ4GroupRows);
  values_.resize(max_groups_ * kernels::kQ4GroupRows);
  landing_.resize(V);
}

void GreedyHead::full_row(const float* h, float* row, kernels::ParallelFor* pool) {
  // The old path for one row: a row of the batched full head is bit-identical to it alone
  // (activations are quantized per row; each output is one row's dot products).
  kernels::matmul(head_, h, 1, row, pool);
  if (softcap_ > 0) kernels::soft_cap(row, head_.rows, softcap_, pool);
}

void GreedyHead::scan(const float* h, float* row, int i) {
  RowScan& r = scans_[static_cast<std::size_t>(i)];
  r.count = SIZE_MAX;
  const std::size_t V = static_cast<std::size_t>(head_.rows);
  const float m = kernels::max_value(row, V);
  if (!std::isfinite(m)) return;
  r.E = kernels::one_plane_error_bound(h, static_cast<std::size_t>(head_.cols), bounds_->n_b.data(), bounds_->rows);
  if (!std::isfinite(r.E)) return;
  // Candidates: y >= tf with tf <= m - 2E (rounded down to a float, so every y >= m - 2E is in).
  const double t = static_cast<double>(m) - 2.0 * r.E;
  float tf = static_cast<float>(t);
  if (static_cast<double>(tf) > t) tf = std::nextafter(tf, -std::numeric_limits<float>::infinity());
  if (!std::isfinite(tf)) return;
  r.tf = tf;
  std::int32_t* ids = ids_.data() + static_cast<std::size_t>(i) * max_groups_ * kernels::kQ4GroupRows;
  r.count = kernels::collect_candidates(row, V, tf, ids, max_groups_, &r.groups, /*fill=*/true);
}

bool GreedyHead::refine(const float* h, float* row, int i) {
  const RowScan& r = scans_[static_cast<std::size_t>(i)];
  if (r.count == SIZE_MAX) return false;
  const std::int32_t* ids = ids_.data() + static_cast<std::size_t>(i) * max_groups_ * kernels::kQ4GroupRows;
  // A non-candidate has y < tf, so its exact pre-cap logit is below u = tf + E (rounded up).
  const double u0 = static_cast<double>(r.tf) + r.E;
  const double u = u0 + std::fabs(u0) * 1e-14;
  exact_.compute(h, std::span<const std::int32_t>(ids, r.count), values_.data(), landing_.data(), nullptr);
  float best = -std::numeric_limits<float>::infinity();
  for (std::size_t k = 0; k < r.count; ++k) best = std::max(best, values_[k]);
  if (!std::isfinite(best)) return false;
  if (softcap_ > 0) {
    // Computed cap C, true cap T (monotone), |C - T| <= delta: a non-candidate's C is at most
    // T(u) + delta, which must stay below the best candidate's value.
    const double cap = softcap_;
    const double tu = cap * std::tanh(u / cap);
    const double bound = tu + std::fabs(tu) * 1e-14 + cap * kTanhError;
    if (!(bound < static_cast<double>(best))) return false;
  } else if (!(u < static_cast<double>(best))) {
    return false;
  }
  // The scan left -inf at every non-candidate; the candidates get their exact values.
  for (std::size_t k = 0; k < r.count; ++k) row[ids[k]] = values_[k];
  stats_.candidates += r.count;
  stats_.groups += r.groups;
  return true;
}

void GreedyHead::run(const float* h, int n, float* out, kernels::ParallelFor* pool) {
  if (n <= 0) return;
  if (n > max_rows_) fail("greedy head: ", n, " rows in one run; sized for ", max_rows_);
  const std::size_t H = static_cast<std::size_t>(head_.cols), V = static_cast<std::size_t>(head_.rows);
  kernels::matmul(one_plane_, h, n, out, pool);  // pre-cap one-plane logits, every row at once
  auto scan_rows = [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i)
      scan(h + static_cast<std::size_t>(i) * H, out + static_cast<std::size_t>(i) * V, static_cast<int>(i));
  };
  if (pool && n > 1) pool->run(n, scan_rows);
  else scan_rows(0, n);
  for (int i = 0; i < n; ++i) {
    const float* hi = h + static_cast<std::size_t>(i) * H;
    float* row = out + static_cast<std::size_t>(i) * V;
    ++stats_.rows;
    if (!refine(hi, row, i)) {
      ++stats_.fallback_rows;
      full_row(hi, row, pool);
    }
  }
}

}  // namespace ringlm::model
