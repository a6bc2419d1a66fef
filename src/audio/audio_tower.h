// The Gemma 4 audio encoder (transformers' Gemma4AudioModel + Gemma4MultimodalEmbedder, a
// Universal Speech Model Conformer):
//   log-mel features [frames][mels] -> two stride-2 3x3 convolutions over (time, mel), each
//   followed by a LayerNorm over channels and ReLU -> a linear projection to the model width
//   (one token per 4 frames, 40 ms) -> Conformer layers of
//     half-step feed-forward, local self-attention (a causal window of 12 tokens, relative
//     sinusoidal position keys, per-dimension query scale, logit soft cap), a light
//     convolution block (GLU, causal depthwise conv, SiLU), a second half-step feed-forward,
//     a final RMS norm (activations clamped to gradient_clipping around each block,
//     Gemma4ClippableLinear clamps on every clipped projection)
//   -> output projection (with bias) -> the embedder's scale-free RMS norm and projection
//   into the text model's embedding space.
//
// Float32 arithmetic over the checkpoint's stored weights (the kernels' matmul for every
// projection and, through im2col, both subsampling convolutions). One clip at a time, only
// its valid frames, so no padding mask is needed: padding frames in transformers sit after
// the clip and, through causal convolutions and masked attention, never reach a valid one.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "audio/audio_config.h"
#include "audio/audio_features.h"
#include "audio/audio_weights.h"
#include "io/tensor.h"
#include "kernels/ref_parallel.h"

namespace ringlm::audio {

class AudioTower {
 public:
  // The audio tower of a model, or nullptr when it has none; sources as VisionTower::load:
  // `mmproj` when given, else `dir`'s towers.rlpk or Hugging Face safetensors.
  static std::unique_ptr<AudioTower> load(const std::filesystem::path& dir, int threads = 0,
                                          const std::filesystem::path& mmproj = {});
  AudioTower(AudioConfig config, std::unique_ptr<io::TensorSource> source, int threads);

  const AudioConfig& config() const { return config_; }

  // Soft-token embeddings [tokens][text_hidden_size] for the features' frames
  // (tokens = ceil(ceil(frames / 2) / 2)).
  std::vector<float> encode(const MelFeatures& features) const;

 private:
  AudioConfig config_;
  std::unique_ptr<io::TensorSource> source_;
  AudioWeights weights_;
  std::unique_ptr<kernels::ParallelFor> pool_;
  std::vector<float> rel_pos_;  // [window + 1][hidden]: sin | cos of distances 0..window
};

}  // namespace ringlm::audio
