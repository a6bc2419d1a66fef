// Activations quantized for the w4a8 kernels ("q8 act"): each row of x [rows, cols] is cut
// into blocks of 32; block b of row m has int8 codes q (round-half-even of x * 127/amax),
// a float scale d = amax / 127 (kept in f32, not rounded to fp16, since it costs nothing
// here), and bias = -8 * sum(q): the q4_0 kernels multiply the unsigned codes c = w/d_w + 8
// and start each block's integer accumulator at bias, so sum(c*q) + bias = sum((c-8)*q).
// Numerics of one w4a8 output:  y = sum_b  d_w[b] * d[b] * sum_{j in b} (c_j - 8) * q_j
// with the inner sums exact in int32 and the outer sum in float.
//
// Two-plane mode (Q8ActBuffer::resize(..., true)), ~15-bit activations at twice the integer
// work: a second int8 plane holds the rounding residual in steps of d/254,
// q2 = round-half-even((x/d - q) * 254) (|x/d - q| <= 1/2, so |q2| <= 127), with its own
// bias2 = -8 * sum(q2) and d2 = d / 254. The q4_0 kernels then use
// sum_j (c_j - 8) * (254 q_j + q2_j), exact in int32, times d_w * d2. (The int8-row LM-head
// kernels use the first plane only.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringlm::kernels {

class ThreadPool;

struct Q8ActView {
  const std::int8_t* qs = nullptr;     // [rows][cols]
  const float* d = nullptr;            // [rows][cols/32]
  const std::int32_t* bias = nullptr;  // [rows][cols/32], -8 * sum of the block's codes
  std::size_t rows = 0, cols = 0;
  // Second plane (null unless two-plane mode), same shapes as qs / d / bias.
  const std::int8_t* qs2 = nullptr;
  const float* d2 = nullptr;           // d / 254
  const std::int32_t* bias2 = nullptr;
  // The rows already interleaved in the kernel's tile layout by KernelTable::prepack_act, on
  // the thread that calls the pool (null: each share packs them itself). Shares are claimed
  // by whichever thread comes first, so a per-thread buffer grown inside a share could first
  // grow on a worker long after warm-up, on the decode path; the caller's is sized by the
  // same thread every step.
  const void* tile_pack = nullptr;
};

// Owns the storage; resize() allocates only when the capacity grows, so a buffer sized once
// for the largest chunk keeps the decode path allocation-free.
class Q8ActBuffer {
 public:
  // cols must be a multiple of 32; two_planes adds the residual plane.
  void resize(std::size_t rows, std::size_t cols, bool two_planes = false);
  bool two_planes() const { return two_planes_; }
  std::int8_t* qs() { return reinterpret_cast<std::int8_t*>(qs_.data()); }
  float* d() { return d_.data(); }
  std::int32_t* bias() { return bias_.data(); }
  std::int8_t* qs2() { return two_planes_ ? reinterpret_cast<std::int8_t*>(qs2_.data()) : nullptr; }
  float* d2() { return two_planes_ ? d2_.data() : nullptr; }
  std::int32_t* bias2() { return two_planes_ ? bias2_.data() : nullptr; }
  Q8ActView view() const;

 private:
  struct alignas(64) Line { std::int8_t b[64]; };
  std::vector<Line> qs_, qs2_;
  std::vector<float> d_, d2_;
  std::vector<std::int32_t> bias_, bias2_;
  std::size_t rows_ = 0, cols_ = 0;
  bool two_planes_ = false;
};

// Scalar reference of the activation quantizer for one row (cols % 32 == 0); the second
// plane is written when qs2 is not null (then d2 and bias2 must not be null either).
void quantize_act_row_ref(const float* x, std::size_t cols, std::int8_t* qs, float* d, std::int32_t* bias,
                          std::int8_t* qs2 = nullptr, float* d2 = nullptr, std::int32_t* bias2 = nullptr);

// Quantizes x [rows, cols] (row stride ldx floats) into out (resized, two planes if asked)
// with the active ISA. Bit-identical to quantize_act_row_ref on every path. With a pool and
// at least kQuantizeActParallelRows rows (prefill), the rows are split over its threads;
// each row is quantized alone, so the bytes are those of the serial call.
constexpr std::size_t kQuantizeActParallelRows = 16;
void quantize_act(const float* x, std::size_t rows, std::size_t cols, std::size_t ldx, Q8ActBuffer& out,
                  bool two_planes = false, ThreadPool* pool = nullptr);

}  // namespace ringlm::kernels
