// The decoder's weights on a compute device (backend::Device), uploaded once when a Model is
// loaded with ModelOptions::device: every linear layer and the LM head in their host layout
// (q4p16 bytes as the model maps or quantized them, or stored F32/F16/BF16 rows), the norm
// vectors in one float32 buffer. The embedding tables stay on the host: a step gathers its
// rows there and sends them with the step's inputs (docs/backends.md).
#pragma once

#include <memory>
#include <vector>

#include "backend/device.h"
#include "model/config.h"
#include "model/weights.h"

namespace ringlm::model::detail {

struct DeviceLayerWeights {
  backend::Weight q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, ple_gate, ple_projection;
  backend::Ref input_norm, post_attention_norm, pre_feedforward_norm, post_feedforward_norm, q_norm, k_norm,
      post_ple_norm;
};

struct DeviceWeights {
  std::shared_ptr<backend::Device> device;
  backend::Weight lm_head, ple_model_projection;
  backend::Ref ple_projection_norm, final_norm;
  std::vector<DeviceLayerWeights> layers;
  std::uint64_t bytes = 0;  // device memory they take
};

// Uploads the weights. Throws ringlm::Error naming the device and the tensor when a matrix's
// format has no device kernel yet (GGUF Q8_0 and K-quants, int8 tables) or does not fit.
std::shared_ptr<const DeviceWeights> upload_weights(std::shared_ptr<backend::Device> device, const ModelWeights& w,
                                                   const ModelConfig& cfg);

}  // namespace ringlm::model::detail
