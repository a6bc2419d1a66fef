// Float32 element-wise and attention kernels of the reference decoder (portable C++,
// written so g++ -O2 vectorises the inner loops).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringlm::kernels {

// y[i] = x[i] / sqrt(mean(x^2) + eps) * (weight ? weight[i] : 1), over n elements. y may alias x.
void rms_norm(const float* x, const float* weight, int n, float eps, float* y);
// rms_norm on `count` rows (row r at x + r * x_stride, written to y + r * y_stride; y may alias
// x), bit-identical to rms_norm row by row. Four rows at a time: rms_norm's sum of squares is
// one sequential chain of double additions (~4 cycles an element), and four rows' chains,
// each in rms_norm's order, run side by side.
void rms_norm_rows(const float* x, std::size_t x_stride, const float* weight, int n, float eps, float* y,
                   std::size_t y_stride, int count);

// Applies the NeoX (rotate-half) rotation to one head vector x of length d in place:
// component i pairs with i + d/2, angle = pos * inv_freq[i]. `cos_sin` holds cos and sin of
// those angles ([d/2] cos then [d/2] sin), computed once per token by rope_angles().
void rope_angles(const double* inv_freq, int half_dim, std::int64_t pos, float* cos_sin);
void rope_apply(float* x, int d, const float* cos_sin);

// tanh to ~2e-7 absolute, vectorizable (see ref_ops.cpp); used by gelu_tanh and soft_cap.
float tanh_fast(float u);
// gelu with the tanh approximation (PyTorch's gelu(approximate="tanh")).
float gelu_tanh(float x);
// out[i] = gelu_tanh(gate[i]) * up[i]; out may alias gate.
void gelu_mul(const float* gate, const float* up, int n, float* out);

// x = cap * tanh(x / cap), in place.
void soft_cap(float* x, std::int64_t n, float cap);
// The same over the pool's threads (null: the calling thread), in slices of 4096 elements:
// element-wise, so the same bits as one call. The LM head's soft cap is 262,144 tanh per
// logits row, which a batched step runs for every row.
class ParallelFor;
void soft_cap(float* x, std::int64_t n, float cap, ParallelFor* pool);

// y[i] += x[i] (n elements).
void add_inplace(float* y, const float* x, std::int64_t n);
// y[i] *= s.
void scale_inplace(float* y, std::int64_t n, float s);

// The reference attention (the model runs the tiled attend() of attention.h, tested against
// this). One query token attends over a cache of n_slots slots; slot s holds keys/values of the
// token at absolute position pos[s] (-1: empty), laid out [slot][kv_head][head_dim].
// Slots count when 0 <= pos[s] <= q_pos and, if window > 0, q_pos - pos[s] < window.
// Query head h reads KV head h / (n_heads / n_kv_heads). scores_scratch holds
// attend_scratch_floats(n_heads, kv) floats.
//
// The query heads that share a KV head are processed together, so each K and V row is read
// from memory once per KV head instead of once per query head (8x less traffic for E2B's
// full layers at long context). Per head the arithmetic and its order are those of a
// one-head-at-a-time loop, so results do not depend on the grouping or on the head range.
//
// K and V are stored as float32 (k, v) or as IEEE binary16 bits (k16, v16, type f16: half
// the bytes a long-context step streams). Widening f16 to f32 is exact, so attention over
// an f16 cache is attention over the f32 values those halves hold; the only extra error is
// the rounding when the row is stored (kv_store_f16, kv_convert.h).
enum class KvType : std::uint8_t { f32, f16 };
struct KvSlots {
  const float* k = nullptr;
  const float* v = nullptr;
  const std::int32_t* pos = nullptr;
  int n_slots = 0;
  int n_kv_heads = 1;
  int head_dim = 0;
  KvType type = KvType::f32;
  const std::uint16_t* k16 = nullptr;  // type == f16: [slot][kv_head][head_dim] halves
  const std::uint16_t* v16 = nullptr;
};
void attend_one(const float* q, int n_heads, std::int64_t q_pos, const KvSlots& kv, int window, float scale,
                float* scores_scratch, float* out);
// Only query heads [head_begin, head_end) (q and out still point at head 0), so one token's
// heads can be split over threads during decode.
void attend_heads(const float* q, int n_heads, int head_begin, int head_end, std::int64_t q_pos,
                  const KvSlots& kv, int window, float scale, float* scores_scratch, float* out);
std::size_t attend_scratch_floats(int n_heads, const KvSlots& kv);

}  // namespace ringlm::kernels
