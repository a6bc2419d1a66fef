#include "kernels/ref_matmul.h"

#include <cstring>
#include <vector>

#include "kernels/q4_weight_matmul.h"
#include "util/float16.h"

namespace ringlm::kernels {

void load_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  const std::int64_t n = w.cols;
  switch (w.dtype) {
    case io::DType::F32:
      std::memcpy(out, w.data + r * n * 4, n * 4);
      break;
    case io::DType::BF16: {
      const std::uint8_t* p = w.data + r * n * 2;
      for (std::int64_t c = 0; c < n; ++c) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * c, 2);
        out[c] = bf16_to_f32(h);
      }
      break;
    }
    case io::DType::F16: {
      const std::uint8_t* p = w.data + r * n * 2;
      for (std::int64_t c = 0; c < n; ++c) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * c, 2);
        out[c] = fp16_to_f32(h);
      }
      break;
    }
    case io::DType::Q4_0:  // packed by model/q4_weights (q4_packed.h layout)
      q4_load_row_f32(w, r, out);
      break;
    default:
      std::memset(out, 0, n * 4);  // unreachable: weights are validated at load
  }
}

namespace {

// Four independent partial sums let the compiler vectorise without -ffast-math.
inline float dot(const float* a, const float* b, std::int64_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  float total = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; i < n; ++i) total += a[i] * b[i];
  return total;
}

void matmul_rows(const WeightMatrix& w, const float* in, int n_tokens, float* out, std::int64_t r0,
                 std::int64_t r1) {
  thread_local std::vector<float> row;
  if (w.dtype == io::DType::F32) {
    const float* base = reinterpret_cast<const float*>(w.data);
    for (std::int64_t r = r0; r < r1; ++r)
      for (int t = 0; t < n_tokens; ++t) out[t * w.rows + r] = dot(base + r * w.cols, in + t * w.cols, w.cols);
    return;
  }
  if (static_cast<std::int64_t>(row.size()) < w.cols) row.resize(w.cols);  // grows once per thread
  for (std::int64_t r = r0; r < r1; ++r) {
    load_row_f32(w, r, row.data());
    for (int t = 0; t < n_tokens; ++t) out[t * w.rows + r] = dot(row.data(), in + t * w.cols, w.cols);
  }
}

}  // namespace

void matmul(const WeightMatrix& w, const float* in, int n_tokens, float* out, ParallelFor* pool) {
  if (w.dtype == io::DType::Q4_0 && q4_activations() != Q4Activations::f32) {
    q4_weight_matmul(w, in, n_tokens, out);  // w4a8 kernels on their own thread pool
    return;
  }
  if (!pool || pool->size() <= 1) {
    matmul_rows(w, in, n_tokens, out, 0, w.rows);
    return;
  }
  pool->run(w.rows, [&](std::int64_t b, std::int64_t e) { matmul_rows(w, in, n_tokens, out, b, e); }, 16);
}

void gather_rows(const WeightMatrix& table, const std::int32_t* ids, int n, std::int64_t col_begin,
                 std::int64_t n_cols, float scale, float* out) {
  const std::int64_t esize = table.dtype == io::DType::F32 ? 4 : 2;
  for (int t = 0; t < n; ++t) {
    const std::uint8_t* p = table.data + (static_cast<std::int64_t>(ids[t]) * table.cols + col_begin) * esize;
    float* o = out + static_cast<std::int64_t>(t) * n_cols;
    for (std::int64_t c = 0; c < n_cols; ++c) {
      float v;
      if (table.dtype == io::DType::F32) {
        std::memcpy(&v, p + 4 * c, 4);
      } else {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * c, 2);
        v = table.dtype == io::DType::BF16 ? bf16_to_f32(h) : fp16_to_f32(h);
      }
      o[c] = v * scale;
    }
  }
}

}  // namespace ringlm::kernels
