// The audio tower's tensors (model.audio_tower.* and model.embed_audio.* of a Hugging Face
// checkpoint, read through io::TensorSet::Towers), bound by name with shape checks. Matrices
// (convolution kernels viewed as [out, in * kernel] rows) stay in the checkpoint's mapping
// in their stored dtype; vectors and the clip bounds of Gemma4ClippableLinear become
// float32 copies.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "audio/audio_config.h"
#include "io/tensor.h"
#include "kernels/ref_matmul.h"

namespace ringlm::audio {

// A bias-free linear layer whose input and output may be clamped (use_clipped_linears);
// without clipping the bounds stay infinite.
struct ClippedLinear {
  kernels::WeightMatrix w;
  float in_min = -std::numeric_limits<float>::infinity(), in_max = std::numeric_limits<float>::infinity();
  float out_min = -std::numeric_limits<float>::infinity(), out_max = std::numeric_limits<float>::infinity();
};

struct AudioFeedForward {
  std::vector<float> pre_norm, post_norm;
  ClippedLinear up, down;  // ffw_layer_1 [4H, H], ffw_layer_2 [H, 4H]
  float clip = 0;          // the gradient-clipping bound for this block's weight dtype
};

struct AudioLayerWeights {
  AudioFeedForward ff1, ff2;
  std::vector<float> norm_pre_attn, norm_post_attn, norm_out;
  ClippedLinear q_proj, k_proj, v_proj, post;
  kernels::WeightMatrix relative_k_proj;  // [H, H], not clipped
  std::vector<float> per_dim_scale;       // [head_dim]
  // The light convolution block.
  std::vector<float> conv_pre_norm, conv_norm;
  ClippedLinear linear_start, linear_end;  // [2H, H], [H, H]
  std::vector<float> depthwise;            // [H][kernel]
  float clip = 0, conv_clip = 0;
};

struct AudioWeights {
  kernels::WeightMatrix conv0, conv1;     // [C0, 1 * 9], [C1, C0 * 9]: (in, time, mel) rows
  std::vector<float> conv0_norm, conv1_norm;
  kernels::WeightMatrix input_proj;       // [H, (mels / 4) * C1]
  std::vector<AudioLayerWeights> layers;
  kernels::WeightMatrix output_proj;      // [P, H]
  std::vector<float> output_bias;         // [P]
  kernels::WeightMatrix embed_projection; // [text_hidden, P]
};

// Throws ringlm::Error naming the tensor (and the checkpoint) when one is missing, has the
// wrong shape or a dtype the kernels do not read.
AudioWeights bind_audio_weights(const AudioConfig& config, const io::TensorSource& source);

// Names of every tensor bind_audio_weights() reads, with their shapes (for make-test-model).
struct AudioTensorShape {
  std::string name;
  std::vector<std::int64_t> shape;
};
std::vector<AudioTensorShape> audio_tensor_shapes(const AudioConfig& config);

// Width of the subsampled mel axis: two stride-2, padding-1, kernel-3 convolutions.
inline int subsampled_mels(int mels) { return ((mels + 1) / 2 + 1) / 2; }

}  // namespace ringlm::audio
