#include "kernels/ggml_weight_matmul.h"

#include <vector>

#include "kernels/dequant_ggml.h"
#include "kernels/q4_weight_matmul.h"
#include "kernels/q8_act.h"
#include "kernels/thread_pool.h"
#include "util/error.h"

namespace ringlm::kernels {

std::optional<GgmlQuant> ggml_quant_of(io::DType t) {
  switch (t) {
    case io::DType::Q8_0: return GgmlQuant::q8_0;
    case io::DType::Q4_K: return GgmlQuant::q4_k;
    case io::DType::Q5_K: return GgmlQuant::q5_k;
    case io::DType::Q6_K: return GgmlQuant::q6_k;
    case io::DType::IQ4_XS: return GgmlQuant::iq4_xs;
    case io::DType::Q3_K: return GgmlQuant::q3_k;
    default: return std::nullopt;
  }
}

void ggml_weight_matmul(const WeightMatrix& w, const float* in, int n_tokens, float* out) {
  const auto type = ggml_quant_of(w.dtype);
  if (!type) fail("ggml_weight_matmul: no direct kernel for dtype ", static_cast<int>(w.dtype));
  thread_local Q8ActBuffer act;
  const auto cols = static_cast<std::size_t>(w.cols);
  quantize_act(in, static_cast<std::size_t>(n_tokens), cols, cols, act,
               w.activations == Q4Activations::int8x2, &default_thread_pool());
  const auto rows = static_cast<std::size_t>(w.rows);
  if (w.packed) {
    if (*type == GgmlQuant::q4_k) return q4k_matmul(Q4KPacked{w.data, rows, cols}, act.view(), out, rows, &default_thread_pool());
    if (*type == GgmlQuant::q6_k) return q6k_matmul(Q6KPacked{w.data, rows, cols}, act.view(), out, rows, &default_thread_pool());
    if (*type == GgmlQuant::q8_0) return q8p16_matmul(Q8P16Packed{w.data, rows, cols}, act.view(), out, rows, &default_thread_pool());
    if (*type == GgmlQuant::iq4_xs)
      return iq4xs_matmul(Iq4XsPacked{w.data, rows, cols}, act.view(), out, rows, &default_thread_pool());
    if (*type == GgmlQuant::q3_k) return q3k_matmul(Q3KPacked{w.data, rows, cols}, act.view(), out, rows, &default_thread_pool());
    if (*type == GgmlQuant::q5_k) return q5k_matmul(Q5KPacked{w.data, rows, cols}, act.view(), out, rows, &default_thread_pool());
    fail("ggml_weight_matmul: ", ggml_quant_name(*type), " has no packed layout");
  }
  ggml_quant_matmul(GgmlQuantMatrix{*type, w.data, rows, cols}, act.view(), out, rows, &default_thread_pool());
}

void q4k_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  thread_local std::vector<BlockQ4_K> blocks;
  const std::size_t nb = static_cast<std::size_t>(w.cols) / 256;
  if (blocks.size() < nb) blocks.resize(nb);
  q4k_unpack_row(Q4KPacked{w.data, static_cast<std::size_t>(w.rows), static_cast<std::size_t>(w.cols)},
                 static_cast<std::size_t>(r), blocks.data());
  dequantize_row_q4_k(blocks.data(), out, w.cols);
}

void q6k_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  thread_local std::vector<BlockQ6_K> blocks;
  const std::size_t nb = static_cast<std::size_t>(w.cols) / 256;
  if (blocks.size() < nb) blocks.resize(nb);
  q6k_unpack_row(Q6KPacked{w.data, static_cast<std::size_t>(w.rows), static_cast<std::size_t>(w.cols)},
                 static_cast<std::size_t>(r), blocks.data());
  dequantize_row_q6_k(blocks.data(), out, w.cols);
}

void iq4xs_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  thread_local std::vector<BlockIQ4_XS> blocks;
  const std::size_t nb = static_cast<std::size_t>(w.cols) / 256;
  if (blocks.size() < nb) blocks.resize(nb);
  iq4xs_unpack_row(Iq4XsPacked{w.data, static_cast<std::size_t>(w.rows), static_cast<std::size_t>(w.cols)},
                   static_cast<std::size_t>(r), blocks.data());
  dequantize_row(io::DType::IQ4_XS, reinterpret_cast<const std::uint8_t*>(blocks.data()), out, w.cols);
}

void q3k_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  thread_local std::vector<BlockQ3_K> blocks;
  const std::size_t nb = static_cast<std::size_t>(w.cols) / 256;
  if (blocks.size() < nb) blocks.resize(nb);
  q3k_unpack_row(Q3KPacked{w.data, static_cast<std::size_t>(w.rows), static_cast<std::size_t>(w.cols)},
                 static_cast<std::size_t>(r), blocks.data());
  dequantize_row(io::DType::Q3_K, blocks.data(), out, w.cols);
}

void q5k_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  thread_local std::vector<BlockQ5_K> blocks;
  const std::size_t nb = static_cast<std::size_t>(w.cols) / 256;
  if (blocks.size() < nb) blocks.resize(nb);
  q5k_unpack_row(Q5KPacked{w.data, static_cast<std::size_t>(w.rows), static_cast<std::size_t>(w.cols)},
                 static_cast<std::size_t>(r), blocks.data());
  dequantize_row(io::DType::Q5_K, blocks.data(), out, w.cols);
}

void q8p16_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  thread_local std::vector<BlockQ8_0> blocks;
  const std::size_t nb = static_cast<std::size_t>(w.cols) / 32;
  if (blocks.size() < nb) blocks.resize(nb);
  q8p16_unpack_row(Q8P16Packed{w.data, static_cast<std::size_t>(w.rows), static_cast<std::size_t>(w.cols)},
                   static_cast<std::size_t>(r), blocks.data());
  dequantize_row_q8_0(blocks.data(), out, w.cols);
}

}  // namespace ringlm::kernels
