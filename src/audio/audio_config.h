// Gemma 4 audio tower configuration: the "audio_config" object of config.json (fields of
// transformers' Gemma4AudioConfig), the audio token ids of the top-level config, and the
// feature extractor's settings (processor_config.json's "feature_extractor", or a flat
// preprocessor_config.json). A checkpoint without an audio_config (text only, or the
// 26B/31B models) has none.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/dtype.h"

namespace ringlm::io {
class GgufFile;
}

namespace ringlm::audio {

struct AudioConfig {
  std::string source;  // config.json path, for error messages

  // The Conformer (Gemma4AudioConfig defaults: the E2B/E4B tower).
  int hidden_size = 1024;
  int num_layers = 12;
  int num_heads = 8;
  int subsampling_channels[2] = {128, 32};
  int conv_kernel_size = 5;
  double residual_weight = 0.5;
  int attention_chunk_size = 12;
  int attention_context_left = 13;
  int attention_context_right = 0;
  double attention_logit_cap = 50.0;
  bool use_clipped_linears = true;
  double rms_norm_eps = 1e-6;
  double gradient_clipping = 1e10;
  int output_proj_dims = 1536;
  int text_hidden_size = 0;  // the embedder's output width (text_config.hidden_size)
  // transformers clamps activations at the largest value of the weights' dtype (65504 for
  // float16). Converted towers (packed, mmproj) keep the checkpoint's dtype here, so
  // storing the weights as f16 or q8_0 does not change the clamp; unset: the weights' own.
  std::optional<io::DType> checkpoint_dtype;

  // Prompt tokens (Gemma4Config defaults; the end token's field is "eoa_token_index").
  int audio_token_id = 258881;
  int boa_token_id = 256000;
  int eoa_token_id = 258883;

  // Feature extractor (Gemma4AudioFeatureExtractor), frame sizes in samples.
  int feature_size = 128;  // mel bins
  int sampling_rate = 16000;
  int frame_length = 320;  // round(rate * frame_length_ms / 1000)
  int hop_length = 160;
  int fft_length = 512;    // next power of two of frame_length (x2 with fft_overdrive)
  double min_frequency = 0.0, max_frequency = 8000.0;
  double preemphasis = 0.0;
  bool preemphasis_htk_flavor = true;
  double input_scale_factor = 1.0;
  double mel_floor = 1e-3;
  std::vector<double> per_bin_mean, per_bin_stddev;  // empty: none
  long long max_samples = 480000;                    // the extractor's max_length (30 s)
  int audio_seq_length = 750;                         // processor: most soft tokens per clip

  int head_dim() const { return hidden_size / num_heads; }
  // Soft tokens for `samples` samples at sampling_rate: mel frames whose whole window is
  // audio, then two stride-2 convolutions (ceil(n / 2) each); 0 when too short.
  int soft_tokens_for(long long samples) const;
  int mel_frames_for(long long samples) const;
};

// Parses config.json text (and, when not empty, the processor config text) into a config,
// or nullopt when config.json has no audio_config. `source` names config.json in errors.
std::optional<AudioConfig> parse_audio_config(const std::string& config_json, const std::string& source,
                                              const std::string& processor_json = "",
                                              const std::string& processor_source = "");
// Reads DIR/config.json and DIR/processor_config.json or DIR/preprocessor_config.json.
std::optional<AudioConfig> load_audio_config(const std::filesystem::path& dir);

// The audio tower of a llama.cpp mmproj file (io/mmproj.h), or nullopt when it has none:
// sizes from clip.audio.* metadata, subsampling channels / conv kernel / output width /
// clipping from the tensors, the rest (and the feature extractor) at what llama.cpp
// hard-codes for gemma4a, which are Gemma4AudioConfig's defaults, unless ringlm's own
// ringlm.audio.* keys say otherwise. Throws ringlm::Error naming the file and key.
std::optional<AudioConfig> audio_config_from_mmproj(const io::GgufFile& file);

}  // namespace ringlm::audio
