#include "kernels/ref_matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/dequant_ggml.h"
#include "kernels/ggml_weight_matmul.h"
#include "kernels/q4_formats.h"
#include "kernels/q4_weight_matmul.h"
#include "util/error.h"
#include "util/float16.h"

namespace ringlm::kernels {

namespace {

// Four-lane vectors (GCC/Clang vector extensions) map onto SSE on baseline x86-64 and NEON
// on ARM, so these loops vectorise at -O2 without -ffast-math. Dot products keep eight
// lanes (two vectors): lane j accumulates elements i ≡ j (mod 8).
typedef float v4f __attribute__((vector_size(16)));
typedef std::uint16_t v4u16 __attribute__((vector_size(8)));
typedef std::uint32_t v4u32 __attribute__((vector_size(16)));

inline v4f load4(const float* p) {
  v4f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Four BF16 values (little-endian) widened to float32: the bits move to the high half.
inline v4f load4_bf16(const std::uint8_t* p) {
  v4u16 h;
  std::memcpy(&h, p, sizeof h);
  const v4u32 wide = __builtin_convertvector(h, v4u32) << 16;
  v4f f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

}  // namespace

void load_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  const std::int64_t n = w.cols;
  switch (w.dtype) {
    case io::DType::F32:
      std::memcpy(out, w.data + r * n * 4, n * 4);
      break;
    case io::DType::BF16: {
      const std::uint8_t* p = w.data + r * n * 2;
      std::int64_t c = 0;
      for (; c + 4 <= n; c += 4) {
        const v4f v = load4_bf16(p + 2 * c);
        std::memcpy(out + c, &v, sizeof v);
      }
      for (; c < n; ++c) {
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
    case io::DType::I8:
      if (!w.row_scales) fail("load_row_f32: I8 weight without row scales");
      dequantize_row_i8(reinterpret_cast<const std::int8_t*>(w.data) + r * n, w.row_scales[r], out,
                        static_cast<std::size_t>(n));
      break;
    default:
      if (w.dtype == io::DType::Q4_0 && w.packed) {  // quantized at load (q4_packed.h layout)
        q4_load_row_f32(w, r, out);
        break;
      }
      if (w.dtype == io::DType::Q4_K && w.packed) {  // repacked at load (q4k_packed.h layout)
        q4k_load_row_f32(w, r, out);
        break;
      }
      if (w.dtype == io::DType::Q6_K && w.packed) {  // repacked at load (q6k_packed.h layout)
        q6k_load_row_f32(w, r, out);
        break;
      }
      if (w.dtype == io::DType::Q8_0 && w.packed) {  // repacked at load (q8p16_packed.h layout)
        q8p16_load_row_f32(w, r, out);
        break;
      }
      if (w.dtype == io::DType::IQ4_XS && w.packed) {  // repacked at load (iq4xs_packed.h layout)
        iq4xs_load_row_f32(w, r, out);
        break;
      }
      if (w.dtype == io::DType::Q3_K && w.packed) {  // repacked at load (q3k_packed.h layout)
        q3k_load_row_f32(w, r, out);
        break;
      }
      if (w.dtype == io::DType::Q5_K && w.packed) {  // repacked at load (q5k_packed.h layout)
        q5k_load_row_f32(w, r, out);
        break;
      }
      // ggml block formats (GGUF): the scalar reference decoder, one row at a time.
      dequantize_row(w.dtype, w.data + r * row_bytes(w.dtype, n), out, n);
  }
}

namespace {

inline float reduce8(v4f lo, v4f hi) {
  return ((lo[0] + lo[1]) + (lo[2] + lo[3])) + ((hi[0] + hi[1]) + (hi[2] + hi[3]));
}

inline float dot(const float* a, const float* b, std::int64_t n) {
  v4f lo = {}, hi = {};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    lo += load4(a + i) * load4(b + i);
    hi += load4(a + i + 4) * load4(b + i + 4);
  }
  float total = reduce8(lo, hi);
  for (; i < n; ++i) total += a[i] * b[i];
  return total;
}

// dot() with the weight row read straight from BF16 (same lane order, same result).
inline float dot_bf16(const std::uint8_t* w, const float* b, std::int64_t n) {
  v4f lo = {}, hi = {};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    lo += load4_bf16(w + 2 * i) * load4(b + i);
    hi += load4_bf16(w + 2 * i + 8) * load4(b + i + 4);
  }
  float total = reduce8(lo, hi);
  for (; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, w + 2 * i, 2);
    total += bf16_to_f32(h) * b[i];
  }
  return total;
}

// One weight row against four input rows: each weight vector is loaded once for four
// products. Per output the summation order equals dot(), so results do not depend on blocking.
inline void dot4(const float* w, const float* x0, const float* x1, const float* x2, const float* x3, std::int64_t n,
                 float* out0, float* out1, float* out2, float* out3) {
  v4f a0 = {}, a1 = {}, b0 = {}, b1 = {}, c0 = {}, c1 = {}, d0 = {}, d1 = {};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const v4f wl = load4(w + i), wh = load4(w + i + 4);
    a0 += wl * load4(x0 + i);
    a1 += wh * load4(x0 + i + 4);
    b0 += wl * load4(x1 + i);
    b1 += wh * load4(x1 + i + 4);
    c0 += wl * load4(x2 + i);
    c1 += wh * load4(x2 + i + 4);
    d0 += wl * load4(x3 + i);
    d1 += wh * load4(x3 + i + 4);
  }
  float t0 = reduce8(a0, a1), t1 = reduce8(b0, b1), t2 = reduce8(c0, c1), t3 = reduce8(d0, d1);
  for (; i < n; ++i) {
    t0 += w[i] * x0[i];
    t1 += w[i] * x1[i];
    t2 += w[i] * x2[i];
    t3 += w[i] * x3[i];
  }
  *out0 = t0;
  *out1 = t1;
  *out2 = t2;
  *out3 = t3;
}

void rows_times_tokens(const float* row, std::int64_t r, const WeightMatrix& w, const float* in, int n_tokens,
                       float* out) {
  const std::int64_t C = w.cols, R = w.rows;
  int t = 0;
  for (; t + 4 <= n_tokens; t += 4)
    dot4(row, in + t * C, in + (t + 1) * C, in + (t + 2) * C, in + (t + 3) * C, C, &out[t * R + r],
         &out[(t + 1) * R + r], &out[(t + 2) * R + r], &out[(t + 3) * R + r]);
  for (; t < n_tokens; ++t) out[t * R + r] = dot(row, in + t * C, C);
}

void matmul_rows(const WeightMatrix& w, const float* in, int n_tokens, float* out, std::int64_t r0,
                 std::int64_t r1) {
  thread_local std::vector<float> row;
  if (w.dtype == io::DType::F32) {
    const float* base = reinterpret_cast<const float*>(w.data);
    for (std::int64_t r = r0; r < r1; ++r) rows_times_tokens(base + r * w.cols, r, w, in, n_tokens, out);
    return;
  }
  if (w.dtype == io::DType::BF16 && n_tokens < 4) {  // decode: no staging copy of the row
    for (std::int64_t r = r0; r < r1; ++r)
      for (int t = 0; t < n_tokens; ++t)
        out[t * w.rows + r] = dot_bf16(w.data + r * w.cols * 2, in + t * w.cols, w.cols);
    return;
  }
  if (static_cast<std::int64_t>(row.size()) < w.cols) row.resize(w.cols);  // grows once per thread
  for (std::int64_t r = r0; r < r1; ++r) {
    load_row_f32(w, r, row.data());
    rows_times_tokens(row.data(), r, w, in, n_tokens, out);
  }
}

}  // namespace

void matmul(const WeightMatrix& w, const float* in, int n_tokens, float* out, ParallelFor* pool) {
  // Float rows are read directly; packed q4_0 and ggml Q8_0/K-quant rows go to the int8-activation
  // kernels (unless the activation mode is f32, or a converted model runs on the float path);
  // other block rows (Q4_1, and all of them in f32 mode) and I8 rows through the scalar
  // dequantizer.
  if (w.dtype == io::DType::I8 && !w.row_scales) fail("reference matmul: I8 weight without row scales");
  if (w.activations != Q4Activations::f32) {  // int8-activation kernels on their own thread pool
    if (w.dtype == io::DType::Q4_0 && w.packed && !w.float_path) {
      q4_weight_matmul(w, in, n_tokens, out);  // q4p16 (w4a8)
      return;
    }
    if (ggml_quant_of(w.dtype)) {
      ggml_weight_matmul(w, in, n_tokens, out);  // GGUF Q8_0 / Q4_K / Q5_K / Q6_K / IQ4_XS / Q3_K (all but Q5_K repacked)
      return;
    }
  }
  if (!pool || pool->size() <= 1) {
    matmul_rows(w, in, n_tokens, out, 0, w.rows);
    return;
  }
  pool->run(w.rows, [&](std::int64_t b, std::int64_t e) { matmul_rows(w, in, n_tokens, out, b, e); }, 16);
}

void matmul_shared_input(const WeightMatrix* const* ws, float* const* outs, std::size_t count, const float* in,
                         int n_tokens, ParallelFor* pool) {
  bool all_q4 = count > 0 && count <= 4 && ws[0]->activations != Q4Activations::f32;
  for (std::size_t i = 0; i < count && all_q4; ++i)
    all_q4 = ws[i]->dtype == io::DType::Q4_0 && ws[i]->packed && !ws[i]->float_path && ws[i]->cols == ws[0]->cols &&
             ws[i]->activations == ws[0]->activations;
  if (all_q4) return q4_weight_matmul_shared(ws, outs, count, in, n_tokens);
  for (std::size_t i = 0; i < count; ++i) matmul(*ws[i], in, n_tokens, outs[i], pool);
}

void matmul_row_list(const WeightMatrix& w, const float* in, const std::int32_t* rows, std::size_t n_rows,
                     float* out, ParallelFor* pool) {
  if (w.dtype == io::DType::I8 && !w.row_scales) fail("reference matmul: I8 weight without row scales");
  if (w.dtype == io::DType::Q4_0 && w.packed && !w.float_path && w.activations != Q4Activations::f32)
    fail("matmul_row_list: packed q4_0 on the w4a8 kernels runs whole 16-row groups (q4_weight_matmul_groups)");
  if (ggml_quant_of(w.dtype) && w.activations != Q4Activations::f32)
    fail("matmul_row_list: Q8_0/K-quant matrices on the int8-activation kernels run whole matrices only");
  const std::int64_t C = w.cols;
  // The same per-row paths as matmul_rows() with one token: F32 and BF16 rows read in place,
  // everything else converted to a float32 row first.
  auto run = [&](std::int64_t b, std::int64_t e) {
    thread_local std::vector<float> row;
    if (w.dtype == io::DType::F32) {
      const float* base = reinterpret_cast<const float*>(w.data);
      for (std::int64_t i = b; i < e; ++i) out[i] = dot(base + static_cast<std::int64_t>(rows[i]) * C, in, C);
      return;
    }
    if (w.dtype == io::DType::BF16) {
      for (std::int64_t i = b; i < e; ++i) out[i] = dot_bf16(w.data + static_cast<std::int64_t>(rows[i]) * C * 2, in, C);
      return;
    }
    if (static_cast<std::int64_t>(row.size()) < C) row.resize(C);  // grows once per thread
    for (std::int64_t i = b; i < e; ++i) {
      load_row_f32(w, rows[i], row.data());
      out[i] = dot(row.data(), in, C);
    }
  };
  const std::int64_t n = static_cast<std::int64_t>(n_rows);
  // Hand a thread at least ~256k multiply-adds, so small row sets never pay a wake-up.
  const std::int64_t min_chunk = std::max<std::int64_t>(16, (std::int64_t{1} << 18) / std::max<std::int64_t>(1, C));
  if (!pool || pool->size() <= 1 || n < 2 * min_chunk) {
    run(0, n);
    return;
  }
  pool->run(n, run, min_chunk);
}

void gather_rows(const WeightMatrix& table, const std::int32_t* ids, int n, std::int64_t col_begin,
                 std::int64_t n_cols, float scale, float* out) {
  if (table.dtype == io::DType::I8) {  // int8 rows (sidecar): only the requested columns are read
    if (!table.row_scales) fail("gather_rows: I8 table without row scales");
    for (int t = 0; t < n; ++t) {
      const auto* q = reinterpret_cast<const std::int8_t*>(table.data) + static_cast<std::int64_t>(ids[t]) * table.cols +
                      col_begin;
      const float s = table.row_scales[ids[t]];
      float* o = out + static_cast<std::int64_t>(t) * n_cols;
      // (s * q) first, as load_row_f32 dequantizes, then the caller's scale.
      for (std::int64_t c = 0; c < n_cols; ++c) o[c] = (s * static_cast<float>(q[c])) * scale;
    }
    return;
  }
  if (table.dtype != io::DType::F32 && table.dtype != io::DType::F16 && table.dtype != io::DType::BF16) {
    // Block-quantized table: decode the whole row, keep the requested columns.
    thread_local std::vector<float> row;
    if (static_cast<std::int64_t>(row.size()) < table.cols) row.resize(table.cols);
    for (int t = 0; t < n; ++t) {
      load_row_f32(table, ids[t], row.data());
      float* o = out + static_cast<std::int64_t>(t) * n_cols;
      for (std::int64_t c = 0; c < n_cols; ++c) o[c] = row[col_begin + c] * scale;
    }
    return;
  }
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
