#include "kernels/q4_weight_matmul.h"

#include <atomic>
#include <vector>

#include "kernels/q4_gemm.h"
#include "kernels/q4_packed.h"

namespace ringlm::kernels {

namespace {
std::atomic<Q4Activations> g_mode{Q4Activations::int8};

Q4Packed packed_view(const WeightMatrix& w) {
  return {w.data, static_cast<std::size_t>(w.rows), static_cast<std::size_t>(w.cols)};
}
}  // namespace

void set_q4_activations(Q4Activations mode) { g_mode.store(mode); }
Q4Activations q4_activations() { return g_mode.load(); }

void q4_weight_matmul(const WeightMatrix& w, const float* in, int n_tokens, float* out) {
  thread_local Q8ActBuffer act;
  quantize_act(in, static_cast<std::size_t>(n_tokens), static_cast<std::size_t>(w.cols),
               static_cast<std::size_t>(w.cols), act, q4_activations() == Q4Activations::int8x2);
  q4_matmul(packed_view(w), act.view(), out, static_cast<std::size_t>(w.rows), &default_thread_pool());
}

void q4_load_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  thread_local std::vector<BlockQ4_0> blocks;
  const std::size_t nb = static_cast<std::size_t>(w.cols) / kQBlock;
  if (blocks.size() < nb) blocks.resize(nb);
  q4_unpack_row(packed_view(w), static_cast<std::size_t>(r), blocks.data());
  dequantize_row_q4_0(blocks.data(), out, static_cast<std::size_t>(w.cols));
}

}  // namespace ringlm::kernels
