// Decodes WAV, FLAC, OGG (Vorbis/Opus) and MP3 with Debian's libsndfile, mixes to mono (the
// mean of the channels, as librosa.load(mono=True)) and resamples to the feature
// extractor's rate with libsoxr's high-quality recipe (librosa's default soxr_hq), the way
// transformers' load_audio prepares a clip for Gemma4AudioFeatureExtractor. Integer samples
// become floats in [-1, 1) as libsndfile (and so soundfile) scales them.
//
// Audio files are hostile input. The duration is read from the header (for WAV, from the
// declared size of the data chunk, before libsndfile sees the file) and checked against
// AudioLimits before any sample buffer is allocated, so a 10-hour header costs nothing; a
// truncated file, an unknown or unsupported sample format, a non-finite float sample or an
// empty clip is refused. Every error is a ringlm::Error that names the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ringlm::audio {

struct AudioLimits {
  std::uint64_t max_file_bytes = 256ull << 20;
  // Gemma 4 takes at most 750 soft tokens (30 s) per clip; transformers silently cuts
  // longer audio, ringlm refuses it so no part of a recording is dropped unseen.
  double max_seconds = 30.0;
  int max_channels = 64;
  int min_rate = 1000, max_rate = 768000;
};

struct AudioClip {
  std::vector<float> samples;  // mono, at `rate`
  int rate = 0;                // the rate asked for (the feature extractor's)
  int source_rate = 0;         // the file's
  int channels = 0;            // the file's
  double seconds = 0.0;
  std::string source;          // file name (or "<data URL>"), for messages
  std::string format;          // "wav", "flac", "ogg", "mp3", ...
};

// What an audio file's header says (libsndfile's open, no sample decoded; MP3 and OGG
// lengths come from libsndfile's scan of the stream).
struct AudioInfo {
  std::string format;    // as AudioClip::format
  int rate = 0;
  int channels = 0;
  double seconds = -1;   // -1: the header does not say
};

// Checks what decode_audio would check from the header (size, channels, rate, declared
// length against limits.max_seconds) without decoding, so a server can budget a clip first.
AudioInfo probe_audio(const std::uint8_t* data, std::size_t size, const std::string& name, const AudioLimits& limits = {});

// `name` is used in error messages only. target_rate 0 keeps the file's rate.
AudioClip decode_audio(const std::uint8_t* data, std::size_t size, const std::string& name, int target_rate,
                       const AudioLimits& limits = {});
AudioClip read_audio_file(const std::filesystem::path& path, int target_rate, const AudioLimits& limits = {});

// Resamples mono float audio from `from` Hz to `to` Hz (libsoxr, high quality), giving
// ceil(n * to / from) samples as librosa.resample does. `name` is for messages.
std::vector<float> resample(const std::vector<float>& in, int from, int to, const std::string& name);

}  // namespace ringlm::audio
