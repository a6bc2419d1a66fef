// Fast attention over a KV cache view (KvSlots, see ref_ops.h): a chunk of query tokens x all
// query heads at once, tiled so each K/V tile is read once per chunk and shared by every
// query token and every query head of its KV head (online softmax, f32 running max and sum).
// SIMD paths per ISA (AVX-512, AVX2, NEON, scalar) chosen by the run-time dispatch
// (dispatch.h). Design and error bounds: docs/attention.md. The reference it is tested
// against is attend_one (ref_ops.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ref_ops.h"
#include "kernels/ref_parallel.h"

namespace ringlm::kernels {

// out[t][h][:] = softmax over the slots visible to token t of (scale * q[t][h] . k[s]) x v[s]
// for the n_tokens query tokens at absolute positions q_pos[t] (any order) and n_heads
// query heads; q and out are [n_tokens][n_heads][kv.head_dim]. Visibility as attend_one:
// 0 <= pos[s] <= q_pos and, when window > 0, q_pos - pos[s] < window. A (token, head)
// with no visible slot gets zeros. Query head h reads KV head h / (n_heads / n_kv_heads).
// kv.type f16: K/V are read as binary16 (kv.k16 / kv.v16) and widened in registers.
// pool (may be null): decode (n_tokens == 1) splits the slots over the participants and
// merges their partial softmax states; a chunk splits (KV head, token) pairs. Allocates
// only when a thread's scratch grows (the first call at a given size), never after.
// Throws ringlm::Error on inconsistent shapes.
void attend(const float* q, int n_tokens, const std::int64_t* q_pos, int n_heads, const KvSlots& kv, int window,
            float scale, float* out, ParallelFor* pool = nullptr);

// One decode token of one sequence (its own cache): the arguments of an attend() call with
// n_tokens = 1.
struct AttendRow {
  const float* q = nullptr;
  const std::int64_t* q_pos = nullptr;
  KvSlots kv;
  float* out = nullptr;
};
// Whether attend(q, 1, ..., kv, ..., pool) splits kv's slots over the pool's threads (long
// caches); when it does not, its result does not depend on the pool.
bool attend_splits_slots(const KvSlots& kv, const ParallelFor* pool);
// The decode tokens of several sequences in one pool call, one row per unit: row i gets the
// bits attend(rows[i].q, 1, rows[i].q_pos, n_heads, rows[i].kv, window, scale, rows[i].out,
// pool) gives it alone. Throws ringlm::Error if a row's cache is long enough for attend to
// split its slots (attend_splits_slots; run those rows with attend) or on bad shapes. A
// batched decode step has one such row per sequence and layer, each too short to be worth a
// pool call of its own (E2B: one KV head, so attend's units would be a single unit).
void attend_rows(const AttendRow* rows, std::size_t n, int n_heads, int window, float scale, ParallelFor* pool);

// The towers' self-attention (vision: bidirectional over every patch of an image): every
// query row against every key, no mask. For query row i < n_queries and head h < n_heads:
//   out[i][h][:] = softmax_j(scale * q[i][h] . k[j][g]) x v[j][g]   over j < n_keys,
// g = h / (n_heads / n_kv_heads); q and out are [n_queries][n_heads][head_dim], k and v
// [n_keys][n_kv_heads][head_dim] (float32). This is what attend_one gives for each query
// with every key in a slot at position 0, query position 0 and no window; n_keys = 0 gives
// zeros. Blocked as flash attention: K is packed transposed once per call, then units of
// (head, block of kDenseQueries query rows) stream K/V tiles of kDenseKeys keys with an
// online softmax, spread over the pool (may be null). A unit's result does not depend on
// the pool or the thread count. Allocates the packed K (n_keys x n_kv_heads x head_dim
// floats, rounded up to whole tiles) per call. Throws ringlm::Error on inconsistent shapes.
// Design: docs/attention.md.
void attend_dense(const float* q, int n_queries, const float* k, const float* v, int n_keys, int n_heads,
                  int n_kv_heads, int head_dim, float scale, float* out, ParallelFor* pool = nullptr);

// y[i] = e^x[i] with the active ISA path's vectorised exp (what attend uses): relative error
// < 1 ulp measured, <= 3 ulp asserted, for x in [-87.33, 88] (docs/attention.md); 0 below -87.3365
// (incl. -inf); inputs above 88 give e^88. NaN in, unspecified out. Exposed for the tests.
void attention_exp(const float* x, float* y, std::size_t n);

// The f16 KV cache's conversions (active ISA path; every path gives the same bits):
// y = binary16(clamp(x, -65504, 65504)), to nearest even, so a value past the f16 range
// saturates instead of becoming inf (NaN in: unspecified); and the exact widening back.
// kv/kv_cache.cpp stores rows with the first; attend() widens inside its K/V loads.
void kv_store_f16(const float* x, std::uint16_t* y, std::size_t n);
void kv_widen_f16(const std::uint16_t* x, float* y, std::size_t n);

}  // namespace ringlm::kernels
