// Scalar reference kernels: the semantics every SIMD path must reproduce (integer block sums
// exact, float accumulation per output in block order).
#include <cstring>

#include "kernels/kernel_table.h"
#include "util/float16.h"

namespace ringlm::kernels {

namespace {

// bias + sum over the block of code * a for row r of a group (codes of block b at cb).
std::int32_t block_sum(const std::uint8_t* cb, std::size_t r, const std::int8_t* a, std::int32_t bias) {
  std::int32_t isum = bias;
  for (std::size_t t = 0; t < 4; ++t) {
    const std::uint8_t* q = cb + t * 64 + r * 4;
    for (std::size_t i = 0; i < 4; ++i) isum += (q[i] & 0x0f) * a[4 * t + i] + (q[i] >> 4) * a[16 + 4 * t + i];
  }
  return isum;
}

void q4_matmul_groups_scalar(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x,
                             float* y, std::size_t ldy) {
  const std::size_t nb = w.blocks_per_row();
  for (std::size_t g = g0; g < g1; ++g) {
    const std::uint8_t* codes = w.group_codes(g);
    const std::uint16_t* scales = w.group_scales(g);
    for (std::size_t m = 0; m < x.rows; ++m) {
      const std::int8_t* xq = x.qs + m * x.cols;
      for (std::size_t r = 0; r < kQ4GroupRows; ++r) {
        const std::size_t n = g * kQ4GroupRows + r;
        if (n >= w.rows) break;
        float acc = 0.0f;
        for (std::size_t b = 0; b < nb; ++b) {
          std::int32_t isum = block_sum(codes + b * 256, r, xq + b * 32, x.bias[m * nb + b]);
          float xd = x.d[m * nb + b];
          if (x.qs2 != nullptr) {  // two planes: (c-8) . (254 q + q2), scale d2
            isum = 254 * isum + block_sum(codes + b * 256, r, x.qs2 + m * x.cols + b * 32, x.bias2[m * nb + b]);
            xd = x.d2[m * nb + b];
          }
          const float dw = fp16_to_f32(scales[b * kQ4GroupRows + r]);
          acc += static_cast<float>(isum) * (dw * xd);
        }
        y[m * ldy + n] = acc;
      }
    }
  }
}

void i8_gemv_f32_scalar(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0,
                        std::size_t r1, const float* x, float* y) {
  for (std::size_t n = r0; n < r1; ++n) {
    const std::int8_t* row = w + n * cols;
    float acc = 0.0f;
    for (std::size_t k = 0; k < cols; ++k) acc += static_cast<float>(row[k]) * x[k];
    y[n] = scale[n] * acc;
  }
}

void i8_gemv_q8_scalar(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0,
                       std::size_t r1, const Q8ActView& x, float* y) {
  for (std::size_t n = r0; n < r1; ++n) {
    const std::int8_t* row = w + n * cols;
    float acc = 0.0f;
    for (std::size_t b = 0; b < cols / 32; ++b) {
      std::int32_t isum = 0;
      for (std::size_t j = 0; j < 32; ++j) isum += row[b * 32 + j] * x.qs[b * 32 + j];
      acc += static_cast<float>(isum) * x.d[b];
    }
    y[n] = scale[n] * acc;
  }
}

}  // namespace

const KernelTable kScalarKernels = {
    quantize_act_row_ref,
    q4_matmul_groups_scalar,
    i8_gemv_f32_scalar,
    i8_gemv_q8_scalar,
    gelu_mul_scalar,
    soft_cap_scalar,
    nullptr,  // prepack_act: rows read in place
};

}  // namespace ringlm::kernels
