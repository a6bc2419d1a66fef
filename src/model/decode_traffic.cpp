#include "model/decode_traffic.h"

#include <algorithm>

#include "kernels/dequant_ggml.h"
#include "kernels/q4_packed.h"

namespace ringlm::model {

std::uint64_t matrix_bytes(const WeightMatrix& w) {
  if (w.rows <= 0 || w.cols <= 0) return 0;
  const auto rows = static_cast<std::uint64_t>(w.rows), cols = static_cast<std::uint64_t>(w.cols);
  switch (w.dtype) {
    case io::DType::F32: return rows * cols * 4;
    case io::DType::F16:
    case io::DType::BF16: return rows * cols * 2;
    case io::DType::I8: return rows * cols + rows * 4;  // codes + one f32 scale per row
    case io::DType::Q4_0:
      if (w.packed) return kernels::Q4Packed{nullptr, rows, cols}.bytes();
      [[fallthrough]];
    default: return rows * static_cast<std::uint64_t>(kernels::row_bytes(w.dtype, w.cols));
  }
}

DecodeTraffic decode_traffic(const ModelConfig& config, const ModelWeights& weights, std::int64_t context,
                             std::size_t kv_element_bytes) {
  DecodeTraffic t;
  for (const LayerWeights& l : weights.layers)
    for (const WeightMatrix* m : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj,
                                  &l.down_proj, &l.ple_gate, &l.ple_projection})
      t.weight_bytes += matrix_bytes(*m);
  t.weight_bytes += matrix_bytes(weights.ple_model_projection) + matrix_bytes(weights.lm_head);
  for (const LayerConfig& lc : config.layers) {
    const std::int64_t visited =
        lc.kind == AttentionKind::Sliding ? std::min<std::int64_t>(context, config.sliding_window) : context;
    // K and V, every kv head of the cache this layer reads.
    t.kv_bytes += static_cast<std::uint64_t>(visited) * static_cast<std::uint64_t>(lc.n_kv_heads) *
                  static_cast<std::uint64_t>(lc.head_dim) * 2 * kv_element_bytes;
  }
  return t;
}

}  // namespace ringlm::model
