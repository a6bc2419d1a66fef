// Kernels of the bounded one-plane greedy LM head (model/greedy_head.h, docs/numerics.md
// "Greedy head"): the load-time weight bounds, the per-token bound E on
// |one-plane logit - two-plane logit| over every row, and the candidate scan.
//
// Notation (q8_act.h): activation block b of x has amax_b, d_b = fl(amax_b / 127), codes q
// (|q| <= 127) and, in two-plane mode, residual codes q2 (|q2| <= 127) with
// d2_b = fl(d_b / 254). A q4_0 row r has per-block scale dw(r,b) and weights w = c - 8 in
// [-8, 7]. The one-plane logit is Y = sum_b dw d_b I_b (I_b = sum_j w_j q_j); the two-plane
// logit is Z = sum_b dw d2_b (254 I_b + K_b) (K_b = sum_j w_j q2_j); the integer sums are
// exact, the outer sums are float. In exact arithmetic
//   Z - Y = sum_b dw (254 d2_b - d_b) I_b  +  sum_b dw d2_b K_b,
// where |254 d2_b - d_b| <= 2^-24 d_b (one rounding), |dw d_b I_b| <= (1+2^-23) amax_b N_b
// with N_b = max_r |dw(r,b)| sum_j |w_j| (127 d_b <= amax_b (1 + 2^-24)), and the second sum
// is bounded twice (the smaller is used):
//   L1:  sum_b (1+2^-23) (d_b / 2) N_b                      (|d2_b q2_j| <= d_b / 2 (1+2^-24))
//   CS:  max_r ||row r dequantized||_2  x  ||(d2_b q2_j)||_2 (Cauchy-Schwarz over the row)
// Float rounding: each kernel forms a block's value from the exact integer sums (exact in
// float: |254 I + K| < 2^24), multiplies by the weight scale and FMAs with the activation
// scale into a running sum (q4_gemv_vnni_impl.h; the other ISAs and the tiled GEMM do the
// same steps, perhaps in another order). A float sum of nb such terms, in any order, is
// within gamma_{nb+2} = (nb+2) 2^-24 / (1 - ...) of the exact sum times the sum of the terms'
// magnitudes, which is <= 1.01 S (S = sum_b amax_b N_b) on either path; with the scale
// rounding above the total is under (2 nb + 8) 2^-24 S, and the slack taken is four times
// that, (8 nb + 64) 2^-24 S, so a kernel that splits a block into two float terms is covered
// too. For E2B (nb = 48) the slack is 2.7e-5 S, about 1 % of the Cauchy-Schwarz term.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/q4_packed.h"
#include "kernels/ref_parallel.h"

namespace ringlm::kernels {

// Load-time bounds of a packed q4_0 matrix (see above): n_b[b] = N_b for b < cols/32 and
// the largest dequantized row 2-norm. Both rounded up (computed in double, then inflated by
// 1e-12 relative), so they are upper bounds of the exact values.
struct Q4HeadBounds {
  double row_norm_max = 0.0;
};
void q4_head_bounds(const Q4Packed& w, double* n_b, Q4HeadBounds* out, ParallelFor* pool);

// E for the activation row x (cols, cols % 32 == 0) quantized as quantize_act_row_ref does:
// an upper bound of |Z - Y| for every row of the matrix n_b / bounds came from (slack
// included). +inf when x is not finite.
double one_plane_error_bound(const float* x, std::size_t cols, const double* n_b, const Q4HeadBounds& bounds);

// The largest value of y[0..n) (n >= 1); NaN if any is NaN.
float max_value(const float* y, std::size_t n);

// Writes to ids the indexes i with y[i] >= t (increasing) and returns their count, or returns
// SIZE_MAX (ids then partly written) as soon as they touch more than max_groups distinct
// 16-row groups (i / kQ4GroupRows); *groups gets the groups touched (when not SIZE_MAX).
// ids needs room for max_groups * kQ4GroupRows entries. With fill, every y[i] < t is set to
// -inf in the same pass (up to where a SIZE_MAX return stopped).
std::size_t collect_candidates(float* y, std::size_t n, float t, std::int32_t* ids, std::size_t max_groups,
                               std::size_t* groups, bool fill = false);

}  // namespace ringlm::kernels
