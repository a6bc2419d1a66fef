// The vision tower's tensors (model.vision_tower.* and model.embed_vision.* of a Hugging Face
// checkpoint, read through io::TensorSet::Towers), bound by name with shape checks. Matrices
// stay in the checkpoint's mapping in their stored dtype; vectors and the clip bounds of
// Gemma4ClippableLinear become float32 copies.
#pragma once

#include <limits>
#include <vector>

#include "io/tensor.h"
#include "kernels/ref_matmul.h"
#include "vision/vision_config.h"

namespace ringlm::vision {

// A bias-free linear layer whose input and output may be clamped (use_clipped_linears);
// without clipping the bounds stay infinite.
struct ClippedLinear {
  kernels::WeightMatrix w;
  float in_min = -std::numeric_limits<float>::infinity(), in_max = std::numeric_limits<float>::infinity();
  float out_min = -std::numeric_limits<float>::infinity(), out_max = std::numeric_limits<float>::infinity();
};

struct VisionLayerWeights {
  std::vector<float> input_norm, post_attention_norm, pre_feedforward_norm, post_feedforward_norm;
  std::vector<float> q_norm, k_norm;  // [head_dim]
  ClippedLinear q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
};

struct VisionWeights {
  kernels::WeightMatrix input_proj;          // [hidden, 3 * patch^2]
  kernels::WeightMatrix position_table;      // [2 * position_embedding_size, hidden]: x rows, then y rows
  std::vector<VisionLayerWeights> layers;
  std::vector<float> std_bias, std_scale;    // standardize only
  kernels::WeightMatrix embed_projection;    // [text_hidden, hidden]
};

// Throws ringlm::Error naming the tensor (and the checkpoint) when one is missing, has the
// wrong shape or a dtype the kernels do not read.
VisionWeights bind_vision_weights(const VisionConfig& config, const io::TensorSource& source);

// Names of every tensor bind_vision_weights() reads, with their shapes (for make-test-model).
struct VisionTensorShape {
  std::string name;
  std::vector<std::int64_t> shape;
};
std::vector<VisionTensorShape> vision_tensor_shapes(const VisionConfig& config);

}  // namespace ringlm::vision
