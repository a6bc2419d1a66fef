// The Gemma 4 vision encoder (transformers' Gemma4VisionModel + Gemma4MultimodalEmbedder):
// patches -> linear patch embedding + learned x/y position embeddings -> transformer layers
// (sandwich RMS norms, q/k RMS norms, a scale-free v norm, 2D rotary embedding, bidirectional
// attention with scale 1, gelu-tanh gated MLP, optionally clamped linears) -> k x k average
// pooling of the patch grid, times sqrt(hidden) -> optional standardization -> the
// embedder's scale-free RMS norm and projection into the text model's embedding space.
//
// Float32 arithmetic over the checkpoint's stored weights (the kernels' matmul and
// attention loops). One image at a time, no padding patches, so no attention mask is needed.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "io/tensor.h"
#include "kernels/ref_parallel.h"
#include "vision/image_preprocess.h"
#include "vision/vision_config.h"
#include "vision/vision_weights.h"

namespace ringlm::vision {

class VisionTower {
 public:
  // The vision tower of the Hugging Face checkpoint in `dir`, or nullptr when its
  // config.json has no vision_config (a text-only checkpoint). Throws ringlm::Error when the
  // config promises a tower whose tensors are missing or malformed.
  static std::unique_ptr<VisionTower> load(const std::filesystem::path& dir, int threads = 0);
  VisionTower(VisionConfig config, std::unique_ptr<io::TensorSource> source, int threads);

  const VisionConfig& config() const { return config_; }
  const VisionWeights& weights() const { return weights_; }

  // Soft-token embeddings [grid.soft_tokens()][text_hidden_size], in the pooled grid's
  // row-major order (the order the prompt's image tokens take).
  std::vector<float> encode(const PatchGrid& grid) const;

 private:
  VisionConfig config_;
  std::unique_ptr<io::TensorSource> source_;
  VisionWeights weights_;
  std::unique_ptr<kernels::ParallelFor> pool_;
  std::vector<double> inv_freq_;  // [head_dim / 4]: the frequencies of each spatial half
};

}  // namespace ringlm::vision
