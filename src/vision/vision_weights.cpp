#include "vision/vision_weights.h"

#include <string>

#include "io/mmproj.h"
#include "util/error.h"

namespace ringlm::vision {
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
    if (!t) fail(src_.describe(), ": vision tensor ", shown(name), " is missing");
    if (t->shape != shape)
      fail(t->file, ": tensor ", shown(name), " has shape ", shape_text(t->shape), ", expected ", shape_text(shape));
    if (t->dtype != io::DType::F32 && t->dtype != io::DType::F16 && t->dtype != io::DType::BF16 &&
        t->dtype != io::DType::Q8_0)
      fail(t->file, ": tensor ", shown(name), " has dtype ", io::dtype_name(t->dtype), " (vision reads F32, F16, BF16, Q8_0)");
    return *t;
  }
  kernels::WeightMatrix matrix(const std::string& name, std::int64_t rows, std::int64_t cols) const {
    const io::TensorView& t = get(name, {rows, cols});
    kernels::WeightMatrix w;
    w.dtype = t.dtype;
    w.data = t.data;
    w.rows = rows;
    w.cols = cols;
    return w;
  }
  std::vector<float> vec(const std::string& name, std::vector<std::int64_t> shape) const {
    const io::TensorView& t = get(name, shape);
    kernels::WeightMatrix w{t.dtype, t.data, 1, t.numel()};
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    kernels::load_row_f32(w, 0, out.data());
    return out;
  }
  float scalar(const std::string& name) const {
    // The converter stores the clip bounds as 0-d tensors; accept [1] too.
    const io::TensorView* t = src_.find(name);
    if (t && t->shape.size() == 1) return vec(name, {1})[0];
    return vec(name, {})[0];
  }
  ClippedLinear linear(const std::string& base, std::int64_t rows, std::int64_t cols, bool clipped) const {
    ClippedLinear l;
    l.w = matrix(base + ".linear.weight", rows, cols);
    if (clipped) {
      l.in_min = scalar(base + ".input_min");
      l.in_max = scalar(base + ".input_max");
      l.out_min = scalar(base + ".output_min");
      l.out_max = scalar(base + ".output_max");
    }
    return l;
  }

 private:
  const io::TensorSource& src_;
};

struct Dims {
  std::int64_t H, F, q_out, kv_out, D, patch_dim, P, T;
};
Dims dims_of(const VisionConfig& c) {
  return {c.hidden_size,
          c.intermediate_size,
          static_cast<std::int64_t>(c.num_heads) * c.head_dim,
          static_cast<std::int64_t>(c.num_kv_heads) * c.head_dim,
          c.head_dim,
          3ll * c.patch_size * c.patch_size,
          c.position_embedding_size,
          c.text_hidden_size};
}

}  // namespace

VisionWeights bind_vision_weights(const VisionConfig& c, const io::TensorSource& src) {
  const Binder b(src);
  const Dims d = dims_of(c);
  VisionWeights w;
  w.input_proj = b.matrix("vision_tower.patch_embedder.input_proj.weight", d.H, d.patch_dim);
  {
    const io::TensorView& t = b.get("vision_tower.patch_embedder.position_embedding_table", {2, d.P, d.H});
    w.position_table = {t.dtype, t.data, 2 * d.P, d.H};
  }
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "vision_tower.encoder.layers." + std::to_string(l) + ".";
    VisionLayerWeights L;
    L.input_norm = b.vec(p + "input_layernorm.weight", {d.H});
    L.post_attention_norm = b.vec(p + "post_attention_layernorm.weight", {d.H});
    L.pre_feedforward_norm = b.vec(p + "pre_feedforward_layernorm.weight", {d.H});
    L.post_feedforward_norm = b.vec(p + "post_feedforward_layernorm.weight", {d.H});
    L.q_norm = b.vec(p + "self_attn.q_norm.weight", {d.D});
    L.k_norm = b.vec(p + "self_attn.k_norm.weight", {d.D});
    const bool clip = c.use_clipped_linears;
    L.q_proj = b.linear(p + "self_attn.q_proj", d.q_out, d.H, clip);
    L.k_proj = b.linear(p + "self_attn.k_proj", d.kv_out, d.H, clip);
    L.v_proj = b.linear(p + "self_attn.v_proj", d.kv_out, d.H, clip);
    L.o_proj = b.linear(p + "self_attn.o_proj", d.H, d.q_out, clip);
    L.gate_proj = b.linear(p + "mlp.gate_proj", d.F, d.H, clip);
    L.up_proj = b.linear(p + "mlp.up_proj", d.F, d.H, clip);
    L.down_proj = b.linear(p + "mlp.down_proj", d.H, d.F, clip);
    w.layers.push_back(std::move(L));
  }
  if (c.standardize) {
    w.std_bias = b.vec("vision_tower.std_bias", {d.H});
    w.std_scale = b.vec("vision_tower.std_scale", {d.H});
  }
  w.embed_projection = b.matrix("embed_vision.embedding_projection.weight", d.T, d.H);
  return w;
}

std::vector<VisionTensorShape> vision_tensor_shapes(const VisionConfig& c) {
  const Dims d = dims_of(c);
  std::vector<VisionTensorShape> out;
  out.push_back({"vision_tower.patch_embedder.input_proj.weight", {d.H, d.patch_dim}});
  out.push_back({"vision_tower.patch_embedder.position_embedding_table", {2, d.P, d.H}});
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "vision_tower.encoder.layers." + std::to_string(l) + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                          "post_feedforward_layernorm"})
      out.push_back({p + n + ".weight", {d.H}});
    out.push_back({p + "self_attn.q_norm.weight", {d.D}});
    out.push_back({p + "self_attn.k_norm.weight", {d.D}});
    const std::pair<const char*, std::vector<std::int64_t>> lin[] = {
        {"self_attn.q_proj", {d.q_out, d.H}}, {"self_attn.k_proj", {d.kv_out, d.H}},
        {"self_attn.v_proj", {d.kv_out, d.H}}, {"self_attn.o_proj", {d.H, d.q_out}},
        {"mlp.gate_proj", {d.F, d.H}},         {"mlp.up_proj", {d.F, d.H}},
        {"mlp.down_proj", {d.H, d.F}}};
    for (const auto& [n, shape] : lin) {
      out.push_back({p + n + ".linear.weight", shape});
      if (c.use_clipped_linears)
        for (const char* cn : kClipNames) out.push_back({p + n + "." + cn, {}});
    }
  }
  if (c.standardize) {
    out.push_back({"vision_tower.std_bias", {d.H}});
    out.push_back({"vision_tower.std_scale", {d.H}});
  }
  out.push_back({"embed_vision.embedding_projection.weight", {d.T, d.H}});
  return out;
}

}  // namespace ringlm::vision
