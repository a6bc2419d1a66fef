// Log-mel features exactly as transformers' Gemma4AudioFeatureExtractor computes them
// (the Universal Speech Model front end):
//   frame_length / 2 zeros before the waveform ("semicausal" padding), frames of
//   frame_length + 1 samples every hop_length, the first frame_length of each (or HTK-style
//   preemphasis over all of them), times a periodic Hann window (float32, as numpy
//   multiplies two float32 arrays), a real FFT of fft_length in float64, the magnitude
//   (not the power), an HTK mel filter bank without normalization (float64),
//   log(mel + mel_floor), optional per-bin mean/stddev, then float32.
// Only frames whose whole window is audio are kept: the extractor marks the others invalid
// (padding to a multiple of 128 samples adds some) and the model drops them.
#pragma once

#include <vector>

#include "audio/audio_config.h"

namespace ringlm::audio {

struct MelFeatures {
  int frames = 0;
  int mels = 0;
  std::vector<float> data;  // [frames][mels]
};

// `samples`: mono audio at config.sampling_rate. Throws ringlm::Error (naming `source`)
// when the clip is too short for one frame.
MelFeatures log_mel_features(const std::vector<float>& samples, const AudioConfig& config, const std::string& source);

// The [fft_length / 2 + 1][feature_size] HTK triangular filter bank (float64), as
// transformers' mel_filter_bank(norm=None, mel_scale="htk") builds it.
std::vector<double> htk_mel_filter_bank(const AudioConfig& config);

}  // namespace ringlm::audio
