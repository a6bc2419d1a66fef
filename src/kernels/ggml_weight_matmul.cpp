#include "kernels/ggml_weight_matmul.h"

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
    default: return std::nullopt;
  }
}

void ggml_weight_matmul(const WeightMatrix& w, const float* in, int n_tokens, float* out) {
  const auto type = ggml_quant_of(w.dtype);
  if (!type) fail("ggml_weight_matmul: no direct kernel for dtype ", static_cast<int>(w.dtype));
  thread_local Q8ActBuffer act;
  const auto cols = static_cast<std::size_t>(w.cols);
  quantize_act(in, static_cast<std::size_t>(n_tokens), cols, cols, act,
               q4_activations() == Q4Activations::int8x2);
  const GgmlQuantMatrix m{*type, w.data, static_cast<std::size_t>(w.rows), cols};
  ggml_quant_matmul(m, act.view(), out, static_cast<std::size_t>(w.rows), &default_thread_pool());
}

}  // namespace ringlm::kernels
