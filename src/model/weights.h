// The decoder's tensors, bound by canonical name from a TensorSource with shape checks
// (which tensors, their names and shapes: model/tensor_manifest.h).
// Matrices stay in the checkpoint's mapping in their stored dtype; only the small vectors
// (norm weights, layer scalars) are converted to float32 copies.
#pragma once

#include <vector>

#include "io/tensor.h"
#include "kernels/ref_matmul.h"
#include "model/config.h"

namespace ringlm::model {

using kernels::WeightMatrix;

struct LayerWeights {
  std::vector<float> input_norm, post_attention_norm, pre_feedforward_norm, post_feedforward_norm;
  std::vector<float> q_norm, k_norm;   // k_norm empty on KV-shared layers
  WeightMatrix q_proj, k_proj, v_proj, o_proj;  // k/v unbound (rows 0) on KV-shared layers
  WeightMatrix gate_proj, up_proj, down_proj;
  // Per-layer-embedding block (unbound when ple_dim is 0).
  WeightMatrix ple_gate, ple_projection;
  std::vector<float> post_ple_norm;
  float layer_scalar = 1.0f;
};

struct ModelWeights {
  WeightMatrix embed_tokens;        // [vocab, hidden]
  WeightMatrix lm_head;             // embed_tokens when tied
  WeightMatrix embed_tokens_ple;    // [ple_vocab, layers * ple_dim]
  WeightMatrix ple_model_projection;  // [layers * ple_dim, hidden]
  std::vector<float> ple_projection_norm;  // [ple_dim]
  std::vector<float> final_norm;
  std::vector<LayerWeights> layers;
};

// Binds every tensor the config calls for. Throws ringlm::Error naming the file (or the
// checkpoint directory, for a missing tensor) and the tensor on a missing tensor, a wrong
// shape or an unsupported dtype. The unused k_proj/v_proj/k_norm of KV-shared layers may be
// present or absent; they are ignored.
ModelWeights bind_weights(const io::TensorSource& source, const ModelConfig& config);

}  // namespace ringlm::model
