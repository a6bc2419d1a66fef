// libFuzzer target for the audio decoders (WAV, FLAC, OGG, MP3 through Debian's libsndfile,
// with ringlm's own RIFF header check in front), resampling (libsoxr) and the log-mel
// front end: any bytes must either decode to finite mono samples within the limits, or
// raise ringlm::Error; never crash, leak or read out of bounds. A decoded clip is resampled
// to 16 kHz and, when long enough, turned into features whose count the config predicts.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "audio/audio_config.h"
#include "audio/audio_decode.h"
#include "audio/audio_features.h"
#include "util/error.h"

// libsndfile 1.2.0 does not free the vorbis_info it set up when a Vorbis header turns out
// corrupt (vorbis_info_init without vorbis_info_clear on that error path): a leak inside
// Debian's library, not in ringlm, suppressed by that one allocation site only.
extern "C" const char* __lsan_default_suppressions() { return "leak:vorbis_info_init\n"; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ringlm;
  audio::AudioLimits limits;
  limits.max_seconds = 2.0;  // keep each run fast; the limit logic is the same
  static const audio::AudioConfig config;
  try {
    const audio::AudioClip clip = audio::decode_audio(data, size, "fuzz-input", config.sampling_rate, limits);
    if (clip.samples.empty() || clip.rate != config.sampling_rate) __builtin_trap();
    for (float s : clip.samples)
      if (!std::isfinite(s)) __builtin_trap();
    if (config.mel_frames_for(static_cast<long long>(clip.samples.size())) > 0) {
      const audio::MelFeatures f = audio::log_mel_features(clip.samples, config, "fuzz-input");
      if (f.frames != config.mel_frames_for(static_cast<long long>(clip.samples.size())) ||
          f.data.size() != static_cast<std::size_t>(f.frames) * f.mels)
        __builtin_trap();
    }
  } catch (const Error&) {
  }
  return 0;
}
