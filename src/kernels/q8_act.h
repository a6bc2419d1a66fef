// Activations quantized for the w4a8 kernels ("q8 act"): each row of x [rows, cols] is cut
// into blocks of 32; block b of row m has int8 codes q (round-half-even of x * 127/amax),
// a float scale d = amax / 127 (kept in f32, not rounded to fp16, since it costs nothing
// here), and bias = -8 * sum(q): the q4_0 kernels multiply the unsigned codes c = w/d_w + 8
// and start each block's integer accumulator at bias, so sum(c*q) + bias = sum((c-8)*q).
// Numerics of one w4a8 output:  y = sum_b  d_w[b] * d[b] * sum_{j in b} (c_j - 8) * q_j
// with the inner sums exact in int32 and the outer sum in float.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringlm::kernels {

struct Q8ActView {
  const std::int8_t* qs = nullptr;     // [rows][cols]
  const float* d = nullptr;            // [rows][cols/32]
  const std::int32_t* bias = nullptr;  // [rows][cols/32], -8 * sum of the block's codes
  std::size_t rows = 0, cols = 0;
};

// Owns the storage; resize() allocates only when the capacity grows, so a buffer sized once
// for the largest chunk keeps the decode path allocation-free.
class Q8ActBuffer {
 public:
  void resize(std::size_t rows, std::size_t cols);  // cols must be a multiple of 32
  std::int8_t* qs() { return reinterpret_cast<std::int8_t*>(qs_.data()); }
  float* d() { return d_.data(); }
  std::int32_t* bias() { return bias_.data(); }
  Q8ActView view() const {
    return {reinterpret_cast<const std::int8_t*>(qs_.data()), d_.data(), bias_.data(), rows_, cols_};
  }

 private:
  struct alignas(64) Line { std::int8_t b[64]; };
  std::vector<Line> qs_;
  std::vector<float> d_;
  std::vector<std::int32_t> bias_;
  std::size_t rows_ = 0, cols_ = 0;
};

// Scalar reference of the activation quantizer for one row (cols % 32 == 0).
void quantize_act_row_ref(const float* x, std::size_t cols, std::int8_t* qs, float* d, std::int32_t* bias);

// Quantizes x [rows, cols] (row stride ldx floats) into out (resized) with the active ISA.
// Bit-identical to quantize_act_row_ref on every path.
void quantize_act(const float* x, std::size_t rows, std::size_t cols, std::size_t ldx, Q8ActBuffer& out);

}  // namespace ringlm::kernels
