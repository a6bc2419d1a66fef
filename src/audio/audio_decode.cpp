#include "audio/audio_decode.h"

#include <sndfile.h>
#include <soxr.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "util/error.h"

namespace ringlm::audio {
namespace {

std::uint32_t le32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}
std::uint16_t le16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }

std::string duration_text(double s) {
  char buf[64];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%.0f:%02.0f:%02.0f", std::floor(s / 3600), std::floor(std::fmod(s, 3600) / 60), std::fmod(s, 60.0));
  else std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

[[noreturn]] void too_long(const std::string& name, double seconds, const AudioLimits& limits, const char* how) {
  fail(name, ": ", how, " ", duration_text(seconds), " of audio; the limit is ", duration_text(limits.max_seconds),
       " per clip (Gemma 4 takes at most 750 soft tokens, 30 s): trim or split it");
}

// RIFF/WAVE: the fmt and data chunks are read here, before libsndfile, so that a header
// declaring hours of audio is refused from its numbers alone and a data chunk that runs
// past the end of the file is reported as truncated (libsndfile would quietly shorten it).
void check_wav_header(const std::uint8_t* d, std::size_t n, const std::string& name, const AudioLimits& limits) {
  if (n < 12) fail(name, ": truncated WAV file (", n, " bytes)");
  std::size_t at = 12;
  std::uint32_t rate = 0, block_align = 0;
  bool have_fmt = false;
  for (int chunks = 0; chunks < 4096; ++chunks) {
    if (at + 8 > n) fail(name, ": truncated WAV file: no data chunk before the end of the file");
    const std::uint32_t size = le32(d + at + 4);
    const std::size_t body = at + 8;
    if (std::memcmp(d + at, "fmt ", 4) == 0) {
      if (size < 16 || body + 16 > n) fail(name, ": corrupt WAV file: fmt chunk of ", size, " bytes");
      const std::uint16_t channels = le16(d + body + 2);
      rate = le32(d + body + 4);
      block_align = le16(d + body + 12);
      if (channels == 0) fail(name, ": corrupt WAV file: the fmt chunk says 0 channels");
      if (rate == 0) fail(name, ": corrupt WAV file: the fmt chunk says a sample rate of 0 Hz");
      if (block_align == 0) fail(name, ": corrupt WAV file: the fmt chunk says 0 bytes per sample frame");
      if (channels > limits.max_channels)
        fail(name, ": WAV audio has ", channels, " channels; at most ", limits.max_channels, " are accepted");
      if (rate < static_cast<std::uint32_t>(limits.min_rate) || rate > static_cast<std::uint32_t>(limits.max_rate))
        fail(name, ": WAV audio has a sample rate of ", rate, " Hz; accepted: ", limits.min_rate, " to ",
             limits.max_rate, " Hz");
      have_fmt = true;
    } else if (std::memcmp(d + at, "data", 4) == 0) {
      if (!have_fmt) return;  // unusual order: libsndfile decides
      // 0 and 0xFFFFFFFF mark a stream whose size was never written: libsndfile takes the
      // rest of the file, and the decoded duration is checked afterwards.
      if (size == 0 || size == 0xFFFFFFFFu) return;
      const double seconds = double(size / block_align) / rate;
      if (seconds > limits.max_seconds) too_long(name, seconds, limits, "the WAV header declares");
      if (body + std::uint64_t{size} > n)
        fail(name, ": truncated WAV file: the data chunk declares ", size, " bytes but the file ends after ", n - body);
      return;
    }
    at = body + std::uint64_t{size} + (size & 1u);
    if (at > n) fail(name, ": truncated WAV file: a '", std::string(reinterpret_cast<const char*>(d + body - 8), 4),
                     "' chunk runs past the end of the file");
  }
  fail(name, ": corrupt WAV file: too many chunks");
}

struct MemoryStream {
  const std::uint8_t* data;
  sf_count_t size;
  sf_count_t pos;
};

sf_count_t vio_len(void* u) { return static_cast<MemoryStream*>(u)->size; }
sf_count_t vio_seek(sf_count_t off, int whence, void* u) {
  auto* s = static_cast<MemoryStream*>(u);
  sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s->pos : s->size;
  const sf_count_t to = base + off;
  if (to < 0 || to > s->size) return -1;
  s->pos = to;
  return s->pos;
}
sf_count_t vio_read(void* out, sf_count_t count, void* u) {
  auto* s = static_cast<MemoryStream*>(u);
  if (count <= 0) return 0;
  const sf_count_t n = std::min(count, s->size - s->pos);
  if (n <= 0) return 0;
  std::memcpy(out, s->data + s->pos, static_cast<std::size_t>(n));
  s->pos += n;
  return n;
}
sf_count_t vio_write(const void*, sf_count_t, void*) { return 0; }
sf_count_t vio_tell(void* u) { return static_cast<MemoryStream*>(u)->pos; }

const char* format_name(int format) {
  switch (format & SF_FORMAT_TYPEMASK) {
    case SF_FORMAT_WAV: return "wav";
    case SF_FORMAT_WAVEX: return "wav";
    case SF_FORMAT_RF64: return "wav";
    case SF_FORMAT_W64: return "w64";
    case SF_FORMAT_FLAC: return "flac";
    case SF_FORMAT_OGG: return (format & SF_FORMAT_SUBMASK) == SF_FORMAT_OPUS ? "opus" : "ogg";
    case SF_FORMAT_MPEG: return "mp3";
    case SF_FORMAT_AIFF: return "aiff";
    case SF_FORMAT_AU: return "au";
    case SF_FORMAT_CAF: return "caf";
    default: return "audio";
  }
}

constexpr float kMaxSample = 1e4f;

struct SndCloser {
  void operator()(SNDFILE* f) const { sf_close(f); }
};

}  // namespace

std::vector<float> resample(const std::vector<float>& in, int from, int to, const std::string& name) {
  if (from == to || in.empty()) return in;
  // librosa.resample: ceil(n * ratio) with the ratio rounded to a double first.
  const double ratio = static_cast<double>(to) / static_cast<double>(from);
  const std::size_t olen = static_cast<std::size_t>(std::ceil(static_cast<double>(in.size()) * ratio));
  std::vector<float> out(olen, 0.0f);
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
  std::size_t idone = 0, odone = 0;
  const soxr_error_t err =
      soxr_oneshot(from, to, 1, in.data(), in.size(), &idone, out.data(), olen, &odone, &io, &q, nullptr);
  if (err) fail(name, ": resampling from ", from, " Hz to ", to, " Hz failed: ", err);
  // Any tail the resampler did not fill stays zero (librosa's fix_length pads the same way).
  return out;
}

namespace {

// What decode_audio and probe_audio check alike before reading samples: the byte size, a WAV
// header, a stream libsndfile can open, and channels and rate within the limits. `stream` is
// the handle's source and must outlive it.
std::unique_ptr<SNDFILE, SndCloser> open_within_limits(const std::uint8_t* data, std::size_t size,
                                                       const std::string& name, const AudioLimits& limits,
                                                       MemoryStream& stream, SF_INFO& info) {
  if (size > limits.max_file_bytes) fail(name, ": audio is ", size, " bytes; the limit is ", limits.max_file_bytes);
  if (size == 0) fail(name, ": empty audio file");
  if (size >= 12 && std::memcmp(data, "RIFF", 4) == 0 && std::memcmp(data + 8, "WAVE", 4) == 0)
    check_wav_header(data, size, name, limits);
  stream = MemoryStream{data, static_cast<sf_count_t>(size), 0};
  SF_VIRTUAL_IO vio{vio_len, vio_seek, vio_read, vio_write, vio_tell};  // copied by libsndfile
  info = SF_INFO{};
  std::unique_ptr<SNDFILE, SndCloser> snd(sf_open_virtual(&vio, SFM_READ, &info, &stream));
  if (!snd) fail(name, ": not a readable WAV, FLAC, OGG or MP3 file (libsndfile: ", sf_strerror(nullptr), ")");
  const std::string format = format_name(info.format);
  if (info.channels < 1 || info.channels > limits.max_channels)
    fail(name, ": ", format, " audio has ", info.channels, " channels; at most ", limits.max_channels, " are accepted");
  if (info.samplerate < limits.min_rate || info.samplerate > limits.max_rate)
    fail(name, ": ", format, " audio has a sample rate of ", info.samplerate, " Hz; accepted: ", limits.min_rate, " to ",
         limits.max_rate, " Hz");
  return snd;
}

}  // namespace

AudioClip decode_audio(const std::uint8_t* data, std::size_t size, const std::string& name, int target_rate,
                       const AudioLimits& limits) {
  MemoryStream stream{};
  SF_INFO info{};
  std::unique_ptr<SNDFILE, SndCloser> snd = open_within_limits(data, size, name, limits, stream, info);

  AudioClip clip;
  clip.source = name;
  clip.format = format_name(info.format);
  clip.channels = info.channels;
  clip.source_rate = info.samplerate;
  // The header's length (MP3 and OGG: from a scan of the stream) against the limit first.
  const bool known_length = info.frames > 0 && info.frames < SF_COUNT_MAX;
  if (known_length && static_cast<double>(info.frames) / info.samplerate > limits.max_seconds)
    too_long(name, static_cast<double>(info.frames) / info.samplerate, limits, "the file holds");
  const sf_count_t cap = static_cast<sf_count_t>(limits.max_seconds * info.samplerate) + 1;

  // Decode in blocks, mixing to mono as we go (the mean of the channels, in float32).
  constexpr sf_count_t kBlock = 4096;
  std::vector<float> block(static_cast<std::size_t>(kBlock * info.channels));
  std::vector<float> mono;
  if (known_length) mono.reserve(static_cast<std::size_t>(info.frames));
  for (;;) {
    const sf_count_t got = sf_readf_float(snd.get(), block.data(), kBlock);
    if (got <= 0) break;
    for (sf_count_t f = 0; f < got; ++f) {
      const float* s = &block[static_cast<std::size_t>(f * info.channels)];
      float sum = 0.0f;
      for (int c = 0; c < info.channels; ++c) {
        if (!std::isfinite(s[c]))
          fail(name, ": ", clip.format, " audio has a non-finite sample (", s[c], ") at frame ",
               static_cast<long long>(mono.size()));
        // Float files hold [-1, 1]; a value 80 dB past full scale is garbage, and would
        // overflow the resampler and the spectrum.
        if (std::fabs(s[c]) > kMaxSample)
          fail(name, ": ", clip.format, " audio has a sample of ", s[c], " at frame ", static_cast<long long>(mono.size()),
               " (float samples are expected within [-1, 1]; the limit is +-", kMaxSample, ")");
        sum += s[c];
      }
      mono.push_back(info.channels == 1 ? sum : sum / static_cast<float>(info.channels));
    }
    if (static_cast<sf_count_t>(mono.size()) > cap)
      too_long(name, static_cast<double>(mono.size()) / info.samplerate, limits, "the file holds more than");
  }
  if (sf_error(snd.get()) != SF_ERR_NO_ERROR)
    fail(name, ": corrupt or truncated ", clip.format, " audio: ", sf_strerror(snd.get()));
  if (known_length && static_cast<sf_count_t>(mono.size()) < info.frames)
    fail(name, ": truncated ", clip.format, " audio: the header promises ", static_cast<long long>(info.frames),
         " sample frames, the file decodes to ", mono.size());
  if (mono.empty()) fail(name, ": ", clip.format, " file holds no audio samples");

  clip.seconds = static_cast<double>(mono.size()) / info.samplerate;
  clip.rate = target_rate > 0 ? target_rate : info.samplerate;
  clip.samples = resample(mono, info.samplerate, clip.rate, name);
  return clip;
}

AudioInfo probe_audio(const std::uint8_t* data, std::size_t size, const std::string& name, const AudioLimits& limits) {
  MemoryStream stream{};
  SF_INFO info{};
  const std::unique_ptr<SNDFILE, SndCloser> snd = open_within_limits(data, size, name, limits, stream, info);
  AudioInfo out;
  out.format = format_name(info.format);
  out.channels = info.channels;
  out.rate = info.samplerate;
  if (info.frames > 0 && info.frames < SF_COUNT_MAX) {
    out.seconds = static_cast<double>(info.frames) / info.samplerate;
    if (out.seconds > limits.max_seconds) too_long(name, out.seconds, limits, "the file holds");
  }
  return out;
}

AudioClip read_audio_file(const std::filesystem::path& path, int target_rate, const AudioLimits& limits) {
  const std::string name = path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail(name, ": no such audio file");
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) fail(name, ": cannot read its size: ", ec.message());
  if (size > limits.max_file_bytes) fail(name, ": audio file is ", size, " bytes; the limit is ", limits.max_file_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(name, ": cannot open");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  if (size && !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size)))
    fail(name, ": read failed");
  return decode_audio(bytes.data(), bytes.size(), name, target_rate, limits);
}

}  // namespace ringlm::audio
