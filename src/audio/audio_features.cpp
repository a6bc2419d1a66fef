#include "audio/audio_features.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>

#include "util/error.h"

namespace ringlm::audio {
namespace {

double hz_to_mel(double f) { return 2595.0 * std::log10(1.0 + f / 700.0); }
double mel_to_hz(double m) { return 700.0 * (std::pow(10.0, m / 2595.0) - 1.0); }

// numpy.linspace(a, b, n): a + i * step, the last point exactly b.
std::vector<double> linspace(double a, double b, int n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  const double step = n > 1 ? (b - a) / (n - 1) : 0.0;
  for (int i = 0; i < n; ++i) v[i] = a + i * step;
  if (n > 1) v[n - 1] = b;
  return v;
}

// In-place iterative radix-2 FFT over n = 2^k complex values, float64.
class Fft {
 public:
  explicit Fft(int n) : n_(n), twiddle_(static_cast<std::size_t>(n / 2)), rev_(static_cast<std::size_t>(n)) {
    for (int i = 0; i < n / 2; ++i) {
      const double a = -2.0 * std::numbers::pi * i / n;
      twiddle_[i] = {std::cos(a), std::sin(a)};
    }
    int bits = 0;
    while ((1 << bits) < n) ++bits;
    for (int i = 0; i < n; ++i) {
      int r = 0;
      for (int b = 0; b < bits; ++b)
        if (i & (1 << b)) r |= 1 << (bits - 1 - b);
      rev_[i] = r;
    }
  }
  void run(std::complex<double>* x) const {
    for (int i = 0; i < n_; ++i)
      if (i < rev_[i]) std::swap(x[i], x[rev_[i]]);
    for (int len = 2; len <= n_; len <<= 1) {
      const int half = len / 2, stride = n_ / len;
      for (int s = 0; s < n_; s += len)
        for (int j = 0; j < half; ++j) {
          const std::complex<double> t = twiddle_[j * stride] * x[s + j + half];
          x[s + j + half] = x[s + j] - t;
          x[s + j] += t;
        }
    }
  }

 private:
  int n_;
  std::vector<std::complex<double>> twiddle_;
  std::vector<int> rev_;
};

}  // namespace

std::vector<double> htk_mel_filter_bank(const AudioConfig& c) {
  const int bins = c.fft_length / 2 + 1, mels = c.feature_size;
  const std::vector<double> mel_pts = linspace(hz_to_mel(c.min_frequency), hz_to_mel(c.max_frequency), mels + 2);
  std::vector<double> hz(mel_pts.size());
  for (std::size_t i = 0; i < hz.size(); ++i) hz[i] = mel_to_hz(mel_pts[i]);
  const std::vector<double> fft_hz = linspace(0.0, static_cast<double>(c.sampling_rate / 2), bins);
  std::vector<double> bank(static_cast<std::size_t>(bins) * mels);
  for (int k = 0; k < bins; ++k)
    for (int m = 0; m < mels; ++m) {
      // Triangles between consecutive filter frequencies; the rising and falling edges.
      const double down = -(hz[m] - fft_hz[k]) / (hz[m + 1] - hz[m]);
      const double up = (hz[m + 2] - fft_hz[k]) / (hz[m + 2] - hz[m + 1]);
      bank[static_cast<std::size_t>(k) * mels + m] = std::max(0.0, std::min(down, up));
    }
  return bank;
}

MelFeatures log_mel_features(const std::vector<float>& samples, const AudioConfig& c, const std::string& source) {
  // The extractor cuts the waveform at max_length samples (30 s) before framing it.
  const long long n = std::min<long long>(static_cast<long long>(samples.size()), c.max_samples);
  const int frames = c.mel_frames_for(n);
  if (frames <= 0)
    fail(source, ": audio is too short (", samples.size(), " samples at ", c.sampling_rate,
         " Hz); one feature frame needs ", c.frame_length + 1 - c.frame_length / 2, " samples");
  const int L = c.frame_length, pad = L / 2, bins = c.fft_length / 2 + 1, mels = c.feature_size;
  // The waveform as the extractor sees it: scaled (float32), frame_length / 2 zeros first.
  auto at = [&](long long i) -> float {
    i -= pad;
    if (i < 0 || i >= n) return 0.0f;
    const float s = samples[static_cast<std::size_t>(i)];
    return c.input_scale_factor == 1.0 ? s : static_cast<float>(s * c.input_scale_factor);
  };
  std::vector<float> window(static_cast<std::size_t>(L));
  for (int i = 0; i < L; ++i)
    window[i] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * i / L));  // periodic Hann
  const std::vector<double> bank = htk_mel_filter_bank(c);
  const Fft fft(c.fft_length);
  const float pre = static_cast<float>(c.preemphasis);

  MelFeatures out;
  out.frames = frames;
  out.mels = mels;
  out.data.resize(static_cast<std::size_t>(frames) * mels);
  std::vector<std::complex<double>> x(static_cast<std::size_t>(c.fft_length));
  std::vector<double> mag(static_cast<std::size_t>(bins));
  for (int t = 0; t < frames; ++t) {
    const long long s0 = static_cast<long long>(t) * c.hop_length;
    for (int j = 0; j < c.fft_length; ++j) x[j] = 0.0;
    for (int j = 0; j < L; ++j) {
      float v;
      if (c.preemphasis <= 0.0) v = at(s0 + j);
      else if (c.preemphasis_htk_flavor) v = j == 0 ? at(s0) * (1.0f - pre) : at(s0 + j) - pre * at(s0 + j - 1);
      else v = at(s0 + j + 1) - pre * at(s0 + j);
      x[j] = static_cast<double>(v * window[j]);  // float32 product, as numpy computes it
    }
    fft.run(x.data());
    for (int k = 0; k < bins; ++k) mag[k] = std::abs(x[k]);
    float* row = &out.data[static_cast<std::size_t>(t) * mels];
    for (int m = 0; m < mels; ++m) {
      double e = 0.0;
      for (int k = 0; k < bins; ++k) e += mag[k] * bank[static_cast<std::size_t>(k) * mels + m];
      double v = std::log(e + c.mel_floor);
      if (!c.per_bin_mean.empty()) v -= c.per_bin_mean[m];
      if (!c.per_bin_stddev.empty()) v /= c.per_bin_stddev[m];
      row[m] = static_cast<float>(v);
    }
  }
  return out;
}

}  // namespace ringlm::audio
