#include "kernels/q8_act.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/dispatch.h"
#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"
#include "util/error.h"

namespace ringlm::kernels {

void Q8ActBuffer::resize(std::size_t rows, std::size_t cols, bool two_planes) {
  if (cols == 0 || cols % 32 != 0) fail("q8 activations: cols ", cols, " is not a positive multiple of 32");
  const std::size_t n = rows * cols;
  if ((n + 63) / 64 > qs_.size()) qs_.resize((n + 63) / 64);
  if (n / 32 > d_.size()) {
    d_.resize(n / 32);
    bias_.resize(n / 32);
  }
  if (two_planes) {
    if ((n + 63) / 64 > qs2_.size()) qs2_.resize((n + 63) / 64);
    if (n / 32 > d2_.size()) {
      d2_.resize(n / 32);
      bias2_.resize(n / 32);
    }
  }
  rows_ = rows;
  cols_ = cols;
  two_planes_ = two_planes;
}

Q8ActView Q8ActBuffer::view() const {
  Q8ActView v{reinterpret_cast<const std::int8_t*>(qs_.data()), d_.data(), bias_.data(), rows_, cols_};
  if (two_planes_) {
    v.qs2 = reinterpret_cast<const std::int8_t*>(qs2_.data());
    v.d2 = d2_.data();
    v.bias2 = bias2_.data();
  }
  return v;
}

void quantize_act_row_ref(const float* x, std::size_t cols, std::int8_t* qs, float* d, std::int32_t* bias,
                          std::int8_t* qs2, float* d2, std::int32_t* bias2) {
  for (std::size_t b = 0; b < cols / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0.0f;
    for (std::size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    std::int32_t sum = 0, sum2 = 0;
    for (std::size_t j = 0; j < 32; ++j) {
      const float t = xb[j] * id;
      const float qf = std::nearbyint(t);
      qs[b * 32 + j] = static_cast<std::int8_t>(qf);
      sum += static_cast<std::int32_t>(qf);
      if (qs2 != nullptr) {
        // t - qf is exact (qf is t's nearest integer); |t - qf| <= 1/2 so |q2| <= 127.
        const auto q2 = static_cast<std::int8_t>(std::nearbyint((t - qf) * 254.0f));
        qs2[b * 32 + j] = q2;
        sum2 += q2;
      }
    }
    d[b] = db;
    bias[b] = -8 * sum;
    if (qs2 != nullptr) {
      d2[b] = db / 254.0f;
      bias2[b] = -8 * sum2;
    }
  }
}

void quantize_act(const float* x, std::size_t rows, std::size_t cols, std::size_t ldx, Q8ActBuffer& out,
                  bool two_planes, ThreadPool* pool) {
  if (ldx < cols) fail("quantize_act: row stride ", ldx, " < cols ", cols);
  out.resize(rows, cols, two_planes);  // on the calling thread: the shares only write rows
  const KernelTable& k = active_kernels();
  const std::size_t nb = cols / 32;
  std::int8_t* qs = out.qs();
  float* d = out.d();
  std::int32_t* bias = out.bias();
  std::int8_t* qs2 = out.qs2();
  float* d2 = out.d2();
  std::int32_t* bias2 = out.bias2();
  auto run = [&](std::size_t m0, std::size_t m1, std::size_t) {
    for (std::size_t m = m0; m < m1; ++m) {
      if (two_planes)
        k.quantize_act_row(x + m * ldx, cols, qs + m * cols, d + m * nb, bias + m * nb, qs2 + m * cols, d2 + m * nb,
                           bias2 + m * nb);
      else
        k.quantize_act_row(x + m * ldx, cols, qs + m * cols, d + m * nb, bias + m * nb, nullptr, nullptr, nullptr);
    }
  };
  // A decode step's few rows cost less than the pool's hand-off (~0.35 us per 1536-wide row).
  if (pool != nullptr && pool->size() > 1 && rows >= kQuantizeActParallelRows) pool->parallel_for(rows, std::move(run));
  else run(0, rows, 0);
}

}  // namespace ringlm::kernels
