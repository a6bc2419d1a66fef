// The bounded one-plane greedy LM head: for a row whose next token is the plain argmax of
// its logits (greedy sampling, no logprobs, penalties, bias or mask), the same token as the
// full int8x2 head at about half its integer work (docs/numerics.md, "Greedy head").
//
//   1. the head over every vocabulary row with ONE activation plane (int8 mode: the first
//      plane of the int8x2 quantization), giving y;
//   2. E = kernels::one_plane_error_bound(h): a rigorous bound of |y_r - z_r| for every row r,
//      z being the int8x2 head's pre-cap logits;
//   3. the candidates r with y_r >= max(y) - 2E (a row below cannot beat the row holding
//      max(y) on z), recomputed exactly with LmHeadRows (bit-identical to the full head, cap
//      included);
//   4. the output row: those exact values at the candidates, -inf elsewhere, so its first
//      argmax is the full head's first argmax. With a soft cap the check also covers ties and
//      the fast tanh's ulp-level non-monotonicity: a non-candidate's capped value is at most
//      cap(u) + 2 delta (u = max(y) - E bounds its z, delta the tanh's error), which must stay
//      below the best candidate's.
// A row falls back to the full head (the old path, the same bits) when the candidates touch
// more than 1/16 of the 16-row groups, when h or y is not finite, or when that check fails.
// Scratch is sized at construction: run() allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/greedy_head.h"
#include "kernels/ref_matmul.h"
#include "model/lm_head.h"

namespace ringlm::model {

// Load-time weight bounds of a head matrix (kernels/greedy_head.h).
struct GreedyHeadBounds {
  std::vector<double> n_b;  // per 32-column activation block
  kernels::Q4HeadBounds rows;
};

// True when the greedy head serves this matrix: packed q4_0 on the w4a8 kernels in int8x2
// mode (in int8 mode the full head already has one plane; other kinds have no group kernel).
bool greedy_head_applies(const kernels::WeightMatrix& head);
GreedyHeadBounds make_greedy_head_bounds(const kernels::WeightMatrix& head, kernels::ParallelFor* pool);

class GreedyHead {
 public:
  // Statistics since construction (for bench and tests).
  struct Stats {
    std::uint64_t rows = 0;           // rows run
    std::uint64_t fallback_rows = 0;  // of those, computed by the full head
    std::uint64_t candidates = 0;     // candidate rows over the rows that did not fall back
    std::uint64_t groups = 0;         // 16-row groups they touched
  };

  // head must satisfy greedy_head_applies; softcap <= 0: none. max_rows: the most rows one
  // run() takes. max_groups: the fallback limit (0: 1/16 of the head's groups).
  GreedyHead(const kernels::WeightMatrix& head, float softcap, const GreedyHeadBounds& bounds, int max_rows,
             std::size_t max_groups = 0);

  // h: n (<= max_rows) final-normed rows [n][cols]; out: n rows [n][vocab] as described
  // above. The rows' scans (max, bound, candidates, -inf fill) run over the pool's threads;
  // the exact recompute then runs row by row (it has its own parallel kernel).
  void run(const float* h, int n, float* out, kernels::ParallelFor* pool);
  const Stats& stats() const { return stats_; }
  // The fast tanh's error bound used by the cap check (tested in model.GreedyHead tests).
  static constexpr double kTanhError = 1e-6;

 private:
  void scan(const float* h, float* row, int i);  // phase 1 of row i (thread-safe across rows)
  bool refine(const float* h, float* row, int i);  // phase 2; false: the row needs the full head
  void full_row(const float* h, float* row, kernels::ParallelFor* pool);

  kernels::WeightMatrix head_;        // int8x2, as the full head runs
  kernels::WeightMatrix one_plane_;   // the same matrix in int8 mode
  float softcap_ = 0.0f;
  const GreedyHeadBounds* bounds_ = nullptr;
  std::size_t max_groups_ = 0;
  int max_rows_ = 0;
  LmHeadRows exact_;
  struct RowScan {
    std::size_t count = 0;  // candidates; SIZE_MAX: fall back
    std::size_t groups = 0;
    float tf = 0.0f;        // the candidate threshold
    double E = 0.0;
  };
  std::vector<RowScan> scans_;        // [max_rows]
  std::vector<std::int32_t> ids_;     // [max_rows][max_groups * 16]
  std::vector<float> values_;         // [max_groups * 16]
  std::vector<float> landing_;        // [vocab]
  Stats stats_;
};

}  // namespace ringlm::model
