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
  // The vision tower of a model, or nullptr when it has none (a text-only checkpoint, or an
  // mmproj with only an audio tower). From `mmproj` (a llama.cpp mmproj GGUF, io/mmproj.h)
  // when given, else from `dir`: a packed directory's towers.rlpk (io/packed_towers.h) or a
  // Hugging Face checkpoint's safetensors, with config.json's vision_config. Throws
  // ringlm::Error when the tower's tensors are missing or malformed.
  static std::unique_ptr<VisionTower> load(const std::filesystem::path& dir, int threads = 0,
                                           const std::filesystem::path& mmproj = {});
  VisionTower(VisionConfig config, std::unique_ptr<io::TensorSource> source, int threads);

  const VisionConfig& config() const { return config_; }
  const VisionWeights& weights() const { return weights_; }

  // Soft-token embeddings [grid.soft_tokens()][text_hidden_size], in the pooled grid's
  // row-major order (the order the prompt's image tokens take).
  std::vector<float> encode(const PatchGrid& grid) const;

  // Run the self-attention through the reference attend_one, one patch at a time (the path
  // before kernels::attend_dense), for A/B checks of speed and numerics; the CLI sets it from
  // RINGLM_ATTENTION=reference, as for the text decoder.
  void set_reference_attention(bool on) { reference_attention_ = on; }

 private:
  VisionConfig config_;
  std::unique_ptr<io::TensorSource> source_;
  VisionWeights weights_;
  std::unique_ptr<kernels::ParallelFor> pool_;
  std::vector<double> inv_freq_;  // [head_dim / 4]: the frequencies of each spatial half
  bool reference_attention_ = false;
};

}  // namespace ringlm::vision
