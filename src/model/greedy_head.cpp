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

GreedyHead::GreedyHead(const kernels::WeightMatrix& head, float softcap, const GreedyHeadBounds& bounds,
                       std::size_t max_groups)
    : head_(head), one_plane_(head), softcap_(softcap), bounds_(&bounds), exact_(head, softcap) {
  if (!greedy_head_applies(head)) fail("greedy head: the LM head is not packed q4_0 on int8x2 activations");
  if (bounds.n_b.size() != static_cast<std::size_t>(head.cols / 32)) fail("greedy head: bounds of another matrix");
  one_plane_.activations = kernels::Q4Activations::int8;
  const std::size_t V = static_cast<std::size_t>(head.rows);
  const std::size_t groups = (V + kernels::kQ4GroupRows - 1) / kernels::kQ4GroupRows;
  max_groups_ = max_groups > 0 ? max_groups : std::max<std::size_t>(1, groups / 16);
  ids_.resize(V);
  values_.resize(V);
  landing_.resize(V);
}

void GreedyHead::full_row(const float* h, float* row, kernels::ParallelFor* pool) {
  // The old path for one row: a row of the batched full head is bit-identical to it alone
  // (activations are quantized per row; each output is one row's dot products).
  kernels::matmul(head_, h, 1, row, pool);
  if (softcap_ > 0) kernels::soft_cap(row, head_.rows, softcap_, pool);
}

bool GreedyHead::refine(const float* h, float* row) {
  const std::size_t V = static_cast<std::size_t>(head_.rows);
  const float m = kernels::max_value(row, V);
  if (!std::isfinite(m)) return false;
  const double E = kernels::one_plane_error_bound(h, static_cast<std::size_t>(head_.cols), bounds_->n_b.data(),
                                                  bounds_->rows);
  if (!std::isfinite(E)) return false;
  // Candidates: y >= tf with tf <= m - 2E (rounded down to a float, so every y >= m - 2E is in).
  const double t = static_cast<double>(m) - 2.0 * E;
  float tf = static_cast<float>(t);
  if (static_cast<double>(tf) > t) tf = std::nextafter(tf, -std::numeric_limits<float>::infinity());
  std::size_t groups = 0;
  const std::size_t n = kernels::collect_candidates(row, V, tf, ids_.data(), max_groups_, &groups);
  if (n == SIZE_MAX) return false;
  // A non-candidate has y < tf, so its exact pre-cap logit is below u = tf + E (rounded up).
  const double u0 = static_cast<double>(tf) + E;
  const double u = u0 + std::fabs(u0) * 1e-14;
  exact_.compute(h, std::span<const std::int32_t>(ids_.data(), n), values_.data(), landing_.data(), nullptr);
  float best = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < n; ++i) best = std::max(best, values_[i]);
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
  std::fill(row, row + V, -std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < n; ++i) row[ids_[i]] = values_[i];
  stats_.candidates += n;
  stats_.groups += groups;
  return true;
}

void GreedyHead::run(const float* h, int n, float* out, kernels::ParallelFor* pool) {
  if (n <= 0) return;
  const std::size_t H = static_cast<std::size_t>(head_.cols), V = static_cast<std::size_t>(head_.rows);
  kernels::matmul(one_plane_, h, n, out, pool);  // pre-cap one-plane logits, every row at once
  for (int i = 0; i < n; ++i) {
    const float* hi = h + static_cast<std::size_t>(i) * H;
    float* row = out + static_cast<std::size_t>(i) * V;
    ++stats_.rows;
    if (!refine(hi, row)) {
      ++stats_.fallback_rows;
      full_row(hi, row, pool);
    }
  }
}

}  // namespace ringlm::model
