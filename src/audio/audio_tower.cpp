#include "audio/audio_tower.h"

#include <algorithm>
#include <cmath>

#include "io/mmproj.h"
#include "io/packed_towers.h"
#include "io/safetensors.h"
#include "kernels/ref_matmul.h"
#include "kernels/ref_ops.h"
#include "util/error.h"

namespace ringlm::audio {
namespace {

using kernels::ParallelFor;

// Distances a query sees: itself and the 11 tokens before it (transformers' mask keeps
// 0 <= q - k < attention_context_left - 1); the position table also has distance 12.
constexpr int kMaxDistance = 12;

void clamp_all(float* x, std::size_t n, float lo, float hi) {
  if (std::isinf(lo) && std::isinf(hi)) return;
  for (std::size_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], lo), hi);
}

// out = clamp(clamp(in) @ W^T): `in` is clamped in place (callers pass scratch they own).
void clipped_matmul(const ClippedLinear& l, float* in, int n, float* out, ParallelFor* pool) {
  clamp_all(in, static_cast<std::size_t>(n) * l.w.cols, l.in_min, l.in_max);
  kernels::matmul(l.w, in, n, out, pool);
  clamp_all(out, static_cast<std::size_t>(n) * l.w.rows, l.out_min, l.out_max);
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// A stride-2, padding-1, 3x3 convolution over (time, mel) of x [T][F][C] into
// out [T'][F'][O] (kernels' matmul over im2col rows, a block of output times at a time),
// then LayerNorm over the O channels (scale only) and ReLU, in place.
void subsample_layer(const std::vector<float>& x, int T, int F, int C, const kernels::WeightMatrix& w,
                     const std::vector<float>& norm, float eps, std::vector<float>& out, int& To, int& Fo,
                     ParallelFor* pool) {
  To = (T + 1) / 2;
  Fo = (F + 1) / 2;
  const int O = static_cast<int>(w.rows), K = C * 9;
  out.assign(static_cast<std::size_t>(To) * Fo * O, 0.0f);
  const int block_t = std::max(1, 8192 / std::max(1, Fo));
  std::vector<float> cols(static_cast<std::size_t>(block_t) * Fo * K);
  for (int t0 = 0; t0 < To; t0 += block_t) {
    const int nt = std::min(block_t, To - t0);
    for (int dt = 0; dt < nt; ++dt)
      for (int f = 0; f < Fo; ++f) {
        float* row = &cols[(static_cast<std::size_t>(dt) * Fo + f) * K];
        // Column order (channel, kernel time, kernel mel): the stored [O][C][3][3] rows.
        for (int kt = 0; kt < 3; ++kt) {
          const int ti = 2 * (t0 + dt) + kt - 1;
          for (int kf = 0; kf < 3; ++kf) {
            const int fi = 2 * f + kf - 1;
            const bool inside = ti >= 0 && ti < T && fi >= 0 && fi < F;
            const float* src = inside ? &x[(static_cast<std::size_t>(ti) * F + fi) * C] : nullptr;
            for (int c = 0; c < C; ++c) row[(c * 3 + kt) * 3 + kf] = inside ? src[c] : 0.0f;
          }
        }
      }
    kernels::matmul(w, cols.data(), nt * Fo, &out[static_cast<std::size_t>(t0) * Fo * O], pool);
  }
  for (std::size_t p = 0; p < static_cast<std::size_t>(To) * Fo; ++p) {
    float* v = &out[p * O];
    double mean = 0.0, var = 0.0;
    for (int o = 0; o < O; ++o) mean += v[o];
    mean /= O;
    for (int o = 0; o < O; ++o) var += (v[o] - mean) * (v[o] - mean);
    const float inv = static_cast<float>(1.0 / std::sqrt(var / O + eps));
    const float m = static_cast<float>(mean);
    for (int o = 0; o < O; ++o) v[o] = std::max(0.0f, (v[o] - m) * inv * norm[o]);
  }
}

// x += residual_weight * post_norm(clamp(down(silu(up(pre_norm(clamp(x))))))).
void feed_forward(const AudioFeedForward& f, float residual_weight, std::vector<float>& x, int S, int H,
                  std::vector<float>& a, std::vector<float>& big, std::vector<float>& o, ParallelFor* pool) {
  const int F = static_cast<int>(f.up.w.rows);
  for (int i = 0; i < S; ++i) {
    float* ai = &a[static_cast<std::size_t>(i) * H];
    std::copy_n(&x[static_cast<std::size_t>(i) * H], H, ai);
    clamp_all(ai, H, -f.clip, f.clip);
    kernels::rms_norm(ai, f.pre_norm.data(), H, 1e-6f, ai);
  }
  clipped_matmul(f.up, a.data(), S, big.data(), pool);
  for (std::size_t i = 0; i < static_cast<std::size_t>(S) * F; ++i) big[i] = silu(big[i]);
  clipped_matmul(f.down, big.data(), S, o.data(), pool);
  for (int i = 0; i < S; ++i) {
    float* oi = &o[static_cast<std::size_t>(i) * H];
    clamp_all(oi, H, -f.clip, f.clip);
    kernels::rms_norm(oi, f.post_norm.data(), H, 1e-6f, oi);
    float* xi = &x[static_cast<std::size_t>(i) * H];
    for (int j = 0; j < H; ++j) xi[j] += residual_weight * oi[j];
  }
}

}  // namespace

std::unique_ptr<AudioTower> AudioTower::load(const std::filesystem::path& dir, int threads,
                                             const std::filesystem::path& mmproj) {
  if (!mmproj.empty()) {
    auto file = io::open_mmproj(mmproj);
    auto cfg = audio_config_from_mmproj(*file);
    if (!cfg) return nullptr;
    return std::make_unique<AudioTower>(*cfg, std::make_unique<io::MmprojSource>(file), threads);
  }
  auto cfg = load_audio_config(dir);
  if (!cfg) return nullptr;
  if (std::filesystem::exists(dir / io::kPackedTowersFile)) {
    auto src = std::make_unique<io::PackedTowerSource>(dir / io::kPackedTowersFile);
    cfg->checkpoint_dtype = src->checkpoint_dtype();
    return std::make_unique<AudioTower>(*cfg, std::move(src), threads);
  }
  if (!std::filesystem::exists(dir / "model.safetensors") && !std::filesystem::exists(dir / "model.safetensors.index.json"))
    fail(dir.string(), ": config.json has an audio_config but the directory has neither ", io::kPackedTowersFile,
         " nor Hugging Face safetensors to read the tower from");
  return std::make_unique<AudioTower>(*cfg, std::make_unique<io::SafetensorsSource>(dir, io::TensorSet::Towers),
                                      threads);
}

AudioTower::AudioTower(AudioConfig config, std::unique_ptr<io::TensorSource> source, int threads)
    : config_(std::move(config)), source_(std::move(source)) {
  weights_ = bind_audio_weights(config_, *source_);
  pool_ = std::make_unique<ParallelFor>(threads > 0 ? threads : kernels::default_thread_count());
  // Sinusoidal relative positions: [sin(d * inv) | cos(d * inv)], inv_i = 10000^(-i / (H/2 - 1)).
  const int H = config_.hidden_size, half = H / 2;
  const double inc = std::log(10000.0) / std::max(half - 1, 1);
  rel_pos_.resize(static_cast<std::size_t>(kMaxDistance + 1) * H);
  for (int d = 0; d <= kMaxDistance; ++d)
    for (int i = 0; i < half; ++i) {
      const double a = d * std::exp(-i * inc);
      rel_pos_[static_cast<std::size_t>(d) * H + i] = static_cast<float>(std::sin(a));
      rel_pos_[static_cast<std::size_t>(d) * H + half + i] = static_cast<float>(std::cos(a));
    }
}

std::vector<float> AudioTower::encode(const MelFeatures& feat) const {
  const AudioConfig& c = config_;
  if (feat.mels != c.feature_size)
    fail("audio encoder: features have ", feat.mels, " mel bins, the tower expects ", c.feature_size);
  if (feat.frames <= 0) fail("audio encoder: no feature frames");
  ParallelFor* pool = pool_.get();
  const float eps = static_cast<float>(c.rms_norm_eps);
  const int H = c.hidden_size, NH = c.num_heads, D = c.head_dim(), K = c.conv_kernel_size;

  // Subsampling: two convolutions, then the projection of each token's (mel, channel) grid.
  std::vector<float> s1, s2;
  int T1, F1, T2, F2;
  subsample_layer(feat.data, feat.frames, feat.mels, 1, weights_.conv0, weights_.conv0_norm, eps, s1, T1, F1, pool);
  subsample_layer(s1, T1, F1, static_cast<int>(weights_.conv0.rows), weights_.conv1, weights_.conv1_norm, eps, s2, T2,
                  F2, pool);
  std::vector<float>().swap(s1);
  const int S = T2;
  if (S > c.audio_seq_length)
    fail("audio encoder: ", S, " soft tokens exceed the processor's limit of ", c.audio_seq_length, " per clip");
  std::vector<float> x(static_cast<std::size_t>(S) * H);
  kernels::matmul(weights_.input_proj, s2.data(), S, x.data(), pool);
  std::vector<float>().swap(s2);

  const std::size_t SH = static_cast<std::size_t>(S) * H;
  std::vector<float> a(SH), q(SH), k(SH), v(SH), attn(SH), o(SH), big(SH * 4);
  std::vector<float> relk(static_cast<std::size_t>(kMaxDistance + 1) * H);
  const float q_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)) / std::log(2.0));
  const float k_scale = static_cast<float>(std::log1p(std::exp(1.0)) / std::log(2.0));
  const float cap = static_cast<float>(c.attention_logit_cap);
  const int window = c.attention_context_left - 1;  // 12: distances 0..11
  const float rw = static_cast<float>(c.residual_weight);

  for (const AudioLayerWeights& L : weights_.layers) {
    feed_forward(L.ff1, rw, x, S, H, a, big, o, pool);

    // --- local self-attention with relative position keys ---
    for (int i = 0; i < S; ++i) {
      float* ai = &a[static_cast<std::size_t>(i) * H];
      std::copy_n(&x[static_cast<std::size_t>(i) * H], H, ai);
      clamp_all(ai, H, -L.clip, L.clip);
      kernels::rms_norm(ai, L.norm_pre_attn.data(), H, 1e-6f, ai);
    }
    {
      std::vector<float> a_copy = a;  // each clipped linear clamps its own input copy
      clipped_matmul(L.q_proj, a_copy.data(), S, q.data(), pool);
      a_copy = a;
      clipped_matmul(L.k_proj, a_copy.data(), S, k.data(), pool);
      a_copy = a;
      clipped_matmul(L.v_proj, a_copy.data(), S, v.data(), pool);
    }
    kernels::matmul(L.relative_k_proj, rel_pos_.data(), kMaxDistance + 1, relk.data(), nullptr);
    std::vector<float> qmul(static_cast<std::size_t>(D));
    for (int d = 0; d < D; ++d) qmul[d] = q_scale * softplus(L.per_dim_scale[d]);
    for (std::size_t i = 0; i < SH; ++i) {
      q[i] *= qmul[i % D];
      k[i] *= k_scale;
    }
    pool->run(S, [&](std::int64_t b, std::int64_t e) {
      float logits[kMaxDistance];
      for (std::int64_t t = b; t < e; ++t) {
        const int lo = static_cast<int>(std::max<std::int64_t>(0, t - (window - 1)));
        const int n = static_cast<int>(t) - lo + 1;
        for (int h = 0; h < NH; ++h) {
          const float* qh = &q[(static_cast<std::size_t>(t) * NH + h) * D];
          float mx = -INFINITY;
          for (int j = 0; j < n; ++j) {
            const int kv = lo + j, dist = static_cast<int>(t) - kv;
            const float* kh = &k[(static_cast<std::size_t>(kv) * NH + h) * D];
            const float* rh = &relk[(static_cast<std::size_t>(dist) * NH + h) * D];
            float s = 0.0f;
            for (int d = 0; d < D; ++d) s += qh[d] * (kh[d] + rh[d]);
            s = cap * std::tanh(s / cap);
            logits[j] = s;
            mx = std::max(mx, s);
          }
          float sum = 0.0f;
          for (int j = 0; j < n; ++j) sum += (logits[j] = std::exp(logits[j] - mx));
          float* out = &attn[(static_cast<std::size_t>(t) * NH + h) * D];
          std::fill_n(out, D, 0.0f);
          for (int j = 0; j < n; ++j) {
            const float p = logits[j] / sum;
            const float* vh = &v[(static_cast<std::size_t>(lo + j) * NH + h) * D];
            for (int d = 0; d < D; ++d) out[d] += p * vh[d];
          }
        }
      }
    });
    clipped_matmul(L.post, attn.data(), S, o.data(), pool);
    for (int i = 0; i < S; ++i) {
      float* oi = &o[static_cast<std::size_t>(i) * H];
      clamp_all(oi, H, -L.clip, L.clip);
      kernels::rms_norm(oi, L.norm_post_attn.data(), H, 1e-6f, oi);
      kernels::add_inplace(&x[static_cast<std::size_t>(i) * H], oi, H);
    }

    // --- light convolution: GLU, causal depthwise conv, SiLU ---
    for (int i = 0; i < S; ++i)
      kernels::rms_norm(&x[static_cast<std::size_t>(i) * H], L.conv_pre_norm.data(), H, eps, &a[static_cast<std::size_t>(i) * H]);
    clipped_matmul(L.linear_start, a.data(), S, big.data(), pool);  // [S][2H]
    for (int i = 0; i < S; ++i)
      for (int j = 0; j < H; ++j) {
        const float* g = &big[static_cast<std::size_t>(i) * 2 * H];
        a[static_cast<std::size_t>(i) * H + j] = g[j] * sigmoid(g[H + j]);
      }
    for (int i = 0; i < S; ++i) {
      float* oi = &o[static_cast<std::size_t>(i) * H];
      for (int j = 0; j < H; ++j) {
        float s = 0.0f;
        for (int kk = 0; kk < K; ++kk) {
          const int src = i + kk - (K - 1);
          if (src >= 0) s += L.depthwise[static_cast<std::size_t>(j) * K + kk] * a[static_cast<std::size_t>(src) * H + j];
        }
        oi[j] = s;
      }
      clamp_all(oi, H, -L.conv_clip, L.conv_clip);
      kernels::rms_norm(oi, L.conv_norm.data(), H, eps, oi);
      for (int j = 0; j < H; ++j) oi[j] = silu(oi[j]);
    }
    clipped_matmul(L.linear_end, o.data(), S, a.data(), pool);
    kernels::add_inplace(x.data(), a.data(), static_cast<std::int64_t>(SH));

    feed_forward(L.ff2, rw, x, S, H, a, big, o, pool);
    for (int i = 0; i < S; ++i) {
      float* xi = &x[static_cast<std::size_t>(i) * H];
      clamp_all(xi, H, -L.clip, L.clip);
      kernels::rms_norm(xi, L.norm_out.data(), H, 1e-6f, xi);
    }
  }

  // Output projection (with bias), then the embedder: scale-free RMS norm, projection.
  const int P = c.output_proj_dims;
  std::vector<float> p(static_cast<std::size_t>(S) * P);
  kernels::matmul(weights_.output_proj, x.data(), S, p.data(), pool);
  for (int i = 0; i < S; ++i) {
    float* pi = &p[static_cast<std::size_t>(i) * P];
    kernels::add_inplace(pi, weights_.output_bias.data(), P);
    kernels::rms_norm(pi, nullptr, P, eps, pi);
  }
  std::vector<float> out(static_cast<std::size_t>(S) * c.text_hidden_size);
  kernels::matmul(weights_.embed_projection, p.data(), S, out.data(), pool);
  return out;
}

}  // namespace ringlm::audio
