#include "audio/audio_weights.h"

#include <algorithm>

#include "io/mmproj.h"
#include "util/error.h"

namespace ringlm::audio {
namespace {

const char* const kClipNames[] = {"input_min", "input_max", "output_min", "output_max"};

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

class Binder {
 public:
  explicit Binder(const io::TensorSource& src) : src_(src) {}
  // A tensor as errors name it: its Hugging Face name and, from an mmproj GGUF, first the
  // name the file stores it under (io::mmproj_gguf_name), which is what a user can look up.
  std::string shown(const std::string& name) const {
    std::string s = "model." + name;
    if (dynamic_cast<const io::MmprojSource*>(&src_) != nullptr)
      if (auto g = io::mmproj_gguf_name(name)) s = *g + " (" + s + ")";
    return s;
  }

  const io::TensorView& get(const std::string& name, const std::vector<std::int64_t>& shape) const {
    const io::TensorView* t = src_.find(name);
    if (!t) fail(src_.describe(), ": audio tensor ", shown(name), " is missing");
    if (t->shape != shape)
      fail(t->file, ": tensor ", shown(name), " has shape ", shape_text(t->shape), ", expected ", shape_text(shape));
    if (t->dtype != io::DType::F32 && t->dtype != io::DType::F16 && t->dtype != io::DType::BF16 &&
        t->dtype != io::DType::Q8_0)
      fail(t->file, ": tensor ", shown(name), " has dtype ", io::dtype_name(t->dtype), " (audio reads F32, F16, BF16, Q8_0)");
    return *t;
  }
  // A tensor of `shape` viewed as a [rows, numel / rows] matrix.
  kernels::WeightMatrix matrix(const std::string& name, const std::vector<std::int64_t>& shape) const {
    const io::TensorView& t = get(name, shape);
    kernels::WeightMatrix w;
    w.dtype = t.dtype;
    w.data = t.data;
    w.rows = shape[0];
    w.cols = t.numel() / shape[0];
    return w;
  }
  std::vector<float> vec(const std::string& name, const std::vector<std::int64_t>& shape) const {
    const io::TensorView& t = get(name, shape);
    kernels::WeightMatrix w{t.dtype, t.data, 1, t.numel()};
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    kernels::load_row_f32(w, 0, out.data());
    return out;
  }
  float scalar(const std::string& name) const {
    const io::TensorView* t = src_.find(name);
    if (t && t->shape.size() == 1) return vec(name, {1})[0];
    return vec(name, {})[0];
  }
  ClippedLinear linear(const std::string& base, std::int64_t rows, std::int64_t cols, bool clipped) const {
    ClippedLinear l;
    l.w = matrix(base + ".linear.weight", {rows, cols});
    if (clipped) {
      l.in_min = scalar(base + ".input_min");
      l.in_max = scalar(base + ".input_max");
      l.out_min = scalar(base + ".output_min");
      l.out_max = scalar(base + ".output_max");
    }
    return l;
  }
  io::DType dtype_of(const std::string& name) const {
    const io::TensorView* t = src_.find(name);
    return t ? t->dtype : io::DType::F32;
  }

 private:
  const io::TensorSource& src_;
};

struct Dims {
  std::int64_t H, F, D, C0, C1, K, P, T, proj_in;
};
Dims dims_of(const AudioConfig& c) {
  const std::int64_t C1 = c.subsampling_channels[1];
  return {c.hidden_size, 4ll * c.hidden_size, c.head_dim(), c.subsampling_channels[0], C1, c.conv_kernel_size,
          c.output_proj_dims, c.text_hidden_size, subsampled_mels(c.feature_size) * C1};
}

// transformers clamps activations at min(gradient_clipping, the largest value of the
// weight's dtype): 65504 for float16 weights, the configured bound otherwise.
float clip_bound(const AudioConfig& c, io::DType dtype) {
  const double dtype_max = dtype == io::DType::F16 ? 65504.0 : 3.4028234663852886e38;
  return static_cast<float>(std::min(c.gradient_clipping, dtype_max));
}

AudioFeedForward feed_forward(const Binder& b, const AudioConfig& c, const Dims& d, const std::string& p) {
  AudioFeedForward f;
  f.pre_norm = b.vec(p + "pre_layer_norm.weight", {d.H});
  f.post_norm = b.vec(p + "post_layer_norm.weight", {d.H});
  f.up = b.linear(p + "ffw_layer_1", d.F, d.H, c.use_clipped_linears);
  f.down = b.linear(p + "ffw_layer_2", d.H, d.F, c.use_clipped_linears);
  f.clip = clip_bound(c, c.checkpoint_dtype.value_or(f.up.w.dtype));
  return f;
}

}  // namespace

AudioWeights bind_audio_weights(const AudioConfig& c, const io::TensorSource& src) {
  const Binder b(src);
  const Dims d = dims_of(c);
  // transformers sizes the projection as (channels[0] / 4) * channels[1], which is the
  // subsampled mel width only when channels[0] equals the mel count (128 in the released
  // towers); a checkpoint where the two differ could not be loaded there either.
  if ((d.C0 / 4) * d.C1 != d.proj_in)
    fail(c.source, ": audio_config.subsampling_conv_channels ", d.C0, ", ", d.C1, " with ", c.feature_size,
         " mel bins: transformers' projection width (channels[0] / 4 * channels[1] = ", (d.C0 / 4) * d.C1,
         ") differs from the subsampled features' (", d.proj_in, ")");
  AudioWeights w;
  const std::string s = "audio_tower.subsample_conv_projection.";
  w.conv0 = b.matrix(s + "layer0.conv.weight", {d.C0, 1, 3, 3});
  w.conv0_norm = b.vec(s + "layer0.norm.weight", {d.C0});
  w.conv1 = b.matrix(s + "layer1.conv.weight", {d.C1, d.C0, 3, 3});
  w.conv1_norm = b.vec(s + "layer1.norm.weight", {d.C1});
  w.input_proj = b.matrix(s + "input_proj_linear.weight", {d.H, d.proj_in});
  const bool clip = c.use_clipped_linears;
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "audio_tower.layers." + std::to_string(l) + ".";
    AudioLayerWeights L;
    L.ff1 = feed_forward(b, c, d, p + "feed_forward1.");
    L.ff2 = feed_forward(b, c, d, p + "feed_forward2.");
    L.norm_pre_attn = b.vec(p + "norm_pre_attn.weight", {d.H});
    L.norm_post_attn = b.vec(p + "norm_post_attn.weight", {d.H});
    L.norm_out = b.vec(p + "norm_out.weight", {d.H});
    L.q_proj = b.linear(p + "self_attn.q_proj", d.H, d.H, clip);
    L.k_proj = b.linear(p + "self_attn.k_proj", d.H, d.H, clip);
    L.v_proj = b.linear(p + "self_attn.v_proj", d.H, d.H, clip);
    L.post = b.linear(p + "self_attn.post", d.H, d.H, clip);
    L.relative_k_proj = b.matrix(p + "self_attn.relative_k_proj.weight", {d.H, d.H});
    L.per_dim_scale = b.vec(p + "self_attn.per_dim_scale", {d.D});
    L.conv_pre_norm = b.vec(p + "lconv1d.pre_layer_norm.weight", {d.H});
    L.conv_norm = b.vec(p + "lconv1d.conv_norm.weight", {d.H});
    L.linear_start = b.linear(p + "lconv1d.linear_start", 2 * d.H, d.H, clip);
    L.linear_end = b.linear(p + "lconv1d.linear_end", d.H, d.H, clip);
    L.depthwise = b.vec(p + "lconv1d.depthwise_conv1d.weight", {d.H, 1, d.K});
    L.clip = clip_bound(c, c.checkpoint_dtype.value_or(b.dtype_of(p + "norm_pre_attn.weight")));
    L.conv_clip = clip_bound(c, c.checkpoint_dtype.value_or(L.linear_start.w.dtype));
    w.layers.push_back(std::move(L));
  }
  w.output_proj = b.matrix("audio_tower.output_proj.weight", {d.P, d.H});
  w.output_bias = b.vec("audio_tower.output_proj.bias", {d.P});
  w.embed_projection = b.matrix("embed_audio.embedding_projection.weight", {d.T, d.P});
  return w;
}

std::vector<AudioTensorShape> audio_tensor_shapes(const AudioConfig& c) {
  const Dims d = dims_of(c);
  std::vector<AudioTensorShape> out;
  const std::string s = "audio_tower.subsample_conv_projection.";
  out.push_back({s + "layer0.conv.weight", {d.C0, 1, 3, 3}});
  out.push_back({s + "layer0.norm.weight", {d.C0}});
  out.push_back({s + "layer1.conv.weight", {d.C1, d.C0, 3, 3}});
  out.push_back({s + "layer1.norm.weight", {d.C1}});
  out.push_back({s + "input_proj_linear.weight", {d.H, d.proj_in}});
  auto linear = [&](const std::string& base, std::vector<std::int64_t> shape) {
    out.push_back({base + ".linear.weight", shape});
    if (c.use_clipped_linears)
      for (const char* cn : kClipNames) out.push_back({base + "." + cn, {}});
  };
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "audio_tower.layers." + std::to_string(l) + ".";
    for (const char* ff : {"feed_forward1.", "feed_forward2."}) {
      out.push_back({p + ff + "pre_layer_norm.weight", {d.H}});
      out.push_back({p + ff + "post_layer_norm.weight", {d.H}});
      linear(p + ff + "ffw_layer_1", {d.F, d.H});
      linear(p + ff + "ffw_layer_2", {d.H, d.F});
    }
    for (const char* n : {"norm_pre_attn", "norm_post_attn", "norm_out"}) out.push_back({p + n + ".weight", {d.H}});
    for (const char* n : {"q_proj", "k_proj", "v_proj", "post"}) linear(p + "self_attn." + n, {d.H, d.H});
    out.push_back({p + "self_attn.relative_k_proj.weight", {d.H, d.H}});
    out.push_back({p + "self_attn.per_dim_scale", {d.D}});
    out.push_back({p + "lconv1d.pre_layer_norm.weight", {d.H}});
    out.push_back({p + "lconv1d.conv_norm.weight", {d.H}});
    linear(p + "lconv1d.linear_start", {2 * d.H, d.H});
    linear(p + "lconv1d.linear_end", {d.H, d.H});
    out.push_back({p + "lconv1d.depthwise_conv1d.weight", {d.H, 1, d.K}});
  }
  out.push_back({"audio_tower.output_proj.weight", {d.P, d.H}});
  out.push_back({"audio_tower.output_proj.bias", {d.P}});
  out.push_back({"embed_audio.embedding_projection.weight", {d.T, d.P}});
  return out;
}

}  // namespace ringlm::audio
