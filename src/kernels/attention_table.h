// Internal: the per-ISA attention kernels behind attention.h. Each attention_<isa>.cpp fills
// one table; attention.cpp picks it from the active ISA and does the threading.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ref_ops.h"
// Before any ISA file's target pragma, so these inline helpers are compiled for the baseline.
#include "util/float16.h"

namespace ringlm::kernels {

// One unit of work: query tokens [t_begin, t_end) x the query heads of KV head kv_head,
// against slots [s_begin, s_end). Updates the running state of each (token, head) row:
// m (max score so far, -inf at start), l (sum of e^(score - m)) and acc (unnormalised
// sum of e^(score - m) v). Rows are indexed like the queries: q/acc row (t, h) at
// (t * n_heads + h) * head_dim, m/l at t * n_heads + h.
struct AttnBlock {
  const float* q = nullptr;
  const std::int64_t* q_pos = nullptr;
  int t_begin = 0, t_end = 0;
  int n_heads = 0;
  int kv_head = 0;
  int group = 1;  // query heads per KV head
  KvSlots kv;
  int s_begin = 0, s_end = 0;
  int window = 0;
  float scale = 1.0f;
  float* acc = nullptr;
  float* m = nullptr;
  float* l = nullptr;
};

// Slots per K/V tile (attention_impl.h); the decode split cuts the slots on tile boundaries.
constexpr int kAttnTile = 32;

// One unit of the towers' dense attention (attend_dense): `rows` query rows of one head,
// row r at q + r * q_stride (out likewise), against all n_keys keys of its KV head: kt holds
// their keys packed tile by tile, [ceil(n_keys / kDenseKeys)][head_dim][kDenseKeys] with 0
// past n_keys, and key s's value row is at v + s * v_stride. out = softmax(scale q.k) v,
// normalised; zeros when n_keys is 0.
constexpr int kDenseKeys = 64;     // keys per tile
constexpr int kDenseQueries = 48;  // query rows per unit at most
struct DenseBlock {
  const float* q = nullptr;
  const float* kt = nullptr;
  const float* v = nullptr;
  float* out = nullptr;
  int rows = 0, n_keys = 0, head_dim = 0;
  std::int64_t q_stride = 0, v_stride = 0, out_stride = 0;
  float scale = 1.0f;
};

struct AttentionKernels {
  void (*block)(const AttnBlock& b);    // kv.type == f32
  void (*block16)(const AttnBlock& b);  // kv.type == f16
  void (*exp_n)(const float* x, float* y, std::size_t n);
  void (*store_f16)(const float* x, std::uint16_t* y, std::size_t n);  // kv_convert.h
  void (*widen_f16)(const std::uint16_t* x, float* y, std::size_t n);
  void (*dense)(const DenseBlock& b);  // attend_dense's units
};

extern const AttentionKernels kAttnScalar;
#if defined(__x86_64__)
extern const AttentionKernels kAttnAvx2;
extern const AttentionKernels kAttnAvx512;
#endif
#if defined(__aarch64__)
extern const AttentionKernels kAttnNeon;
#endif

}  // namespace ringlm::kernels
