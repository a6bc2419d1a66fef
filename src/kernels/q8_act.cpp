#include "kernels/q8_act.h"

#include <algorithm>
#include <cmath>

#include "kernels/dispatch.h"
#include "kernels/kernel_table.h"
#include "util/error.h"

namespace ringlm::kernels {

void Q8ActBuffer::resize(std::size_t rows, std::size_t cols) {
  if (cols == 0 || cols % 32 != 0) fail("q8 activations: cols ", cols, " is not a positive multiple of 32");
  const std::size_t n = rows * cols;
  if ((n + 63) / 64 > qs_.size()) qs_.resize((n + 63) / 64);
  if (n / 32 > d_.size()) {
    d_.resize(n / 32);
    bias_.resize(n / 32);
  }
  rows_ = rows;
  cols_ = cols;
}

void quantize_act_row_ref(const float* x, std::size_t cols, std::int8_t* qs, float* d, std::int32_t* bias) {
  for (std::size_t b = 0; b < cols / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0.0f;
    for (std::size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    std::int32_t sum = 0;
    for (std::size_t j = 0; j < 32; ++j) {
      const auto q = static_cast<std::int8_t>(std::nearbyint(xb[j] * id));
      qs[b * 32 + j] = q;
      sum += q;
    }
    d[b] = db;
    bias[b] = -8 * sum;
  }
}

void quantize_act(const float* x, std::size_t rows, std::size_t cols, std::size_t ldx, Q8ActBuffer& out) {
  if (ldx < cols) fail("quantize_act: row stride ", ldx, " < cols ", cols);
  out.resize(rows, cols);
  const KernelTable& k = active_kernels();
  const std::size_t nb = cols / 32;
  for (std::size_t m = 0; m < rows; ++m)
    k.quantize_act_row(x + m * ldx, cols, out.qs() + m * cols, out.d() + m * nb, out.bias() + m * nb);
}

}  // namespace ringlm::kernels
