// Scalar reference kernels: the semantics every SIMD path must reproduce (integer block sums
// exact, float accumulation per output in block order).
#include <cstring>

#include "kernels/kernel_table.h"
#include "util/float16.h"

namespace ringlm::kernels {

namespace {

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
          std::int32_t isum = x.bias[m * nb + b];
          for (std::size_t t = 0; t < 4; ++t) {
            const std::uint8_t* q = codes + b * 256 + t * 64 + r * 4;
            const std::int8_t* a = xq + b * 32 + 4 * t;
            for (std::size_t i = 0; i < 4; ++i) isum += (q[i] & 0x0f) * a[i] + (q[i] >> 4) * a[16 + i];
          }
          const float dw = fp16_to_f32(scales[b * kQ4GroupRows + r]);
          acc += static_cast<float>(isum) * (dw * x.d[m * nb + b]);
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
};

}  // namespace ringlm::kernels
