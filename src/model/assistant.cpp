#include "model/assistant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "io/config_fields.h"
#include "io/gguf_reader.h"
#include "io/safetensors.h"
#include "kernels/attention.h"
#include "model/assistant_gguf.h"
#include "model/q4_weights.h"
#include "util/error.h"
#include "util/float16.h"

namespace ringlm::model {
namespace {

using json = nlohmann::json;

std::string shape_string(const std::vector<std::int64_t>& s) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}

// Tensor lookups that name the file and the tensor on any mismatch, and remember what was
// bound so the loader can refuse tensors it does not know (an unknown layout is refused by
// name, never half-loaded).
class Binder {
 public:
  using Display = std::function<std::string(const std::string&)>;
  Binder(const io::TensorSource& src, Display display) : src_(src), display_(std::move(display)) {}

  // The tensor's name as its file spells it (a GGUF file: llama.cpp's names).
  std::string shown(const std::string& name) const { return display_ ? display_(name) : name; }

  const io::TensorView& view(const std::string& name, std::vector<std::int64_t> shape) {
    const io::TensorView* v = src_.find(name);
    if (!v)
      fail_model_file(src_.describe(), ": missing tensor ", shown(name), " (expected shape ", shape_string(shape), ")");
    if (v->shape != shape)
      fail_model_file(v->file, ": tensor ", shown(name), ": shape ", shape_string(v->shape), ", expected ",
                      shape_string(shape));
    used_.insert(name);
    return *v;
  }
  // Float matrices (any checkpoint) or ggml block matrices (a GGUF file; the reader admits
  // only types ringlm computes with; convert_matrices() converts them at load).
  kernels::WeightMatrix matrix(const std::string& name, std::int64_t rows, std::int64_t cols) {
    const io::TensorView& v = view(name, {rows, cols});
    // (Integer tables are never matrices; any other dtype a source gives is float or blocks.)
    if (v.dtype == io::DType::I8 || v.dtype == io::DType::I32 || v.dtype == io::DType::I64)
      fail_model_file(v.file, ": tensor ", shown(name), ": dtype ", io::dtype_name(v.dtype),
                      " (expected F32, F16, BF16 or a GGUF block type)");
    kernels::WeightMatrix w;
    w.dtype = v.dtype;
    w.data = v.data;
    w.rows = rows;
    w.cols = cols;
    w.activations = kernels::Q4Activations::f32;
    return w;
  }
  std::vector<float> vec(const std::string& name, std::int64_t n) {
    const io::TensorView& v = view(name, {n});
    std::vector<float> out(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      if (v.dtype == io::DType::F32) std::memcpy(&out[i], v.data + 4 * i, 4);
      else if (v.dtype == io::DType::BF16 || v.dtype == io::DType::F16) {
        std::uint16_t b;
        std::memcpy(&b, v.data + 2 * i, 2);
        out[i] = v.dtype == io::DType::BF16 ? bf16_to_f32(b) : fp16_to_f32(b);
      } else {
        fail_model_file(v.file, ": tensor ", shown(name), ": dtype ", io::dtype_name(v.dtype),
                        " (expected F32, F16 or BF16)");
      }
      if (!std::isfinite(out[i])) fail_model_file(v.file, ": tensor ", shown(name), ": element ", i, " is not finite");
    }
    return out;
  }
  // Names the first tensor of the checkpoint nothing bound (ignoring `skip`).
  void refuse_unused(const std::set<std::string>& skip) const {
    for (const std::string& n : src_.names())
      if (!used_.contains(n) && !skip.contains(n))
        fail_model_file(src_.describe(), ": tensor ", shown(n),
                        " is not part of the Gemma 4 assistant layout this version reads (docs/speculative.md)");
  }

 private:
  const io::TensorSource& src_;
  Display display_;
  std::set<std::string> used_;
};

std::vector<std::int32_t> read_ordering(const io::TensorView& v, const std::string& name, int vocab) {
  if (v.dtype != io::DType::I64 && v.dtype != io::DType::I32)
    fail_model_file(v.file, ": tensor ", name, ": dtype ", io::dtype_name(v.dtype), " (expected I64 or I32)");
  std::vector<std::int32_t> out(static_cast<std::size_t>(vocab));
  std::vector<char> seen(static_cast<std::size_t>(vocab), 0);
  for (int i = 0; i < vocab; ++i) {
    std::int64_t t;
    if (v.dtype == io::DType::I64) std::memcpy(&t, v.data + 8 * static_cast<std::size_t>(i), 8);
    else {
      std::int32_t t32;
      std::memcpy(&t32, v.data + 4 * static_cast<std::size_t>(i), 4);
      t = t32;
    }
    if (t < 0 || t >= vocab || seen[static_cast<std::size_t>(t)])
      fail_model_file(v.file, ": tensor ", name, ": entry ", i, " (", t, ") is out of range or repeated; expected a "
                      "permutation of the ", vocab, " token ids");
    seen[static_cast<std::size_t>(t)] = 1;
    out[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(t);
  }
  return out;
}

int required_int(const io::ConfigFields& f, const char* name) {
  if (!f.has(name)) f.bad(name, "missing");
  return f.integer(name, 0, 1, 1 << 20);
}

}  // namespace

AssistantConfig parse_assistant_config(const std::string& text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    fail_model_file(source, ": not valid JSON: ", e.what());
  }
  if (!doc.is_object()) fail_model_file(source, ": expected a JSON object");
  io::ConfigFields top{doc, source, ""};
  if (top.has("model_type") && doc["model_type"] != "gemma4_assistant")
    top.bad("model_type", "expected \"gemma4_assistant\", got " + doc["model_type"].dump());
  if (!doc.contains("text_config") || !doc["text_config"].is_object()) top.bad("text_config", "missing or not an object");
  AssistantConfig c;
  c.source = source;
  c.backbone_hidden = static_cast<int>(required_int(top, "backbone_hidden_size"));
  c.ordered_embeddings = top.boolean("use_ordered_embeddings", false);
  c.num_centroids = static_cast<int>(top.integer("num_centroids", 2048, 1, 1 << 20));
  c.centroid_top_k = static_cast<int>(top.integer("centroid_intermediate_top_k", 32, 1, 1 << 20));

  // Every assistant layer reads the target's KV: transformers requires num_kv_shared_layers ==
  // num_hidden_layers (and sets it so when 0). The text parser wants at least one owning layer,
  // so it reads a copy with none shared and the layers are marked afterwards.
  json tc = doc["text_config"];
  io::ConfigFields f{tc, source, "text_config."};
  const std::int64_t n_layers = required_int(f, "num_hidden_layers");
  const std::int64_t shared = f.integer("num_kv_shared_layers", 0, 0, 4096);
  if (shared != 0 && shared != n_layers)
    f.bad("num_kv_shared_layers", "must equal num_hidden_layers (every assistant layer reads the target's KV)");
  if (f.integer("hidden_size_per_layer_input", 256, 0, 1 << 20) != 0)
    f.bad("hidden_size_per_layer_input", "must be 0 (the assistant has no per-layer embeddings)");
  if (f.boolean("use_double_wide_mlp", false)) f.bad("use_double_wide_mlp", "must be false");
  tc["num_kv_shared_layers"] = 0;
  c.text = parse_model_config(json{{"text_config", tc}}.dump(), source);
  for (LayerConfig& L : c.text.layers) L.owns_kv = false, L.kv_source_layer = -1;
  if (c.ordered_embeddings) {
    if (c.text.vocab_size % c.num_centroids)
      top.bad("num_centroids", "must divide text_config.vocab_size (" + std::to_string(c.text.vocab_size) + ")");
    if (c.centroid_top_k > c.num_centroids) top.bad("centroid_intermediate_top_k", "must be at most num_centroids");
  }
  return c;
}

std::shared_ptr<const AssistantModel> AssistantModel::load(const std::filesystem::path& path,
                                                          const AssistantOptions& options) {
  if (std::filesystem::is_regular_file(path)) {
    if (io::is_gguf_file(path)) return load_assistant_gguf(path, options);
    fail_model_file(path.string(), ": not a GGUF file (no GGUF magic); give a gemma4-assistant GGUF file or the "
                    "Hugging Face checkpoint directory (config.json + model.safetensors)");
  }
  const auto cfg_path = path / "config.json";
  std::ifstream in(cfg_path, std::ios::binary);
  if (!in) fail_io(cfg_path.string(), ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  AssistantConfig config = parse_assistant_config(text.str(), cfg_path.string());
  return from_source(std::move(config), io::open_safetensors_dir(path), options);
}

std::shared_ptr<const AssistantModel> AssistantModel::from_source(
    AssistantConfig config, std::unique_ptr<io::TensorSource> source, const AssistantOptions& options,
    const std::function<std::string(const std::string&)>& display, const std::set<std::string>& extra_skip) {
  auto m = std::shared_ptr<AssistantModel>(new AssistantModel());
  m->config_ = std::move(config);
  m->source_ = std::move(source);
  const AssistantConfig& c = m->config_;
  const ModelConfig& t = c.text;
  const std::int64_t H = t.hidden_size, B = c.backbone_hidden, V = t.vocab_size;
  Binder b(*m->source_, display);
  m->embed = m->source_->find("lm_head.weight") ? b.matrix("lm_head.weight", V, H) : b.matrix("embed_tokens.weight", V, H);
  if (m->source_->find("lm_head.weight") && m->source_->find("embed_tokens.weight")) b.view("embed_tokens.weight", {V, H});
  m->final_norm = b.vec("norm.weight", H);
  m->pre_projection = b.matrix("pre_projection.weight", H, 2 * B);
  m->post_projection = b.matrix("post_projection.weight", B, H);
  if (c.ordered_embeddings) {
    const std::string ord = "masked_embedding.token_ordering";
    m->centroids = b.matrix("masked_embedding.centroids.weight", c.num_centroids, H);
    m->token_ordering = read_ordering(b.view(ord, {V}), b.shown(ord), static_cast<int>(V));
  }
  for (int l = 0; l < t.num_layers; ++l) {
    const LayerConfig& L = t.layers[static_cast<std::size_t>(l)];
    const std::string p = "layers." + std::to_string(l) + ".";
    const std::int64_t qd = static_cast<std::int64_t>(t.num_heads) * L.head_dim;
    AssistantLayerWeights w;
    w.input_norm = b.vec(p + "input_layernorm.weight", H);
    w.q_proj = b.matrix(p + "self_attn.q_proj.weight", qd, H);
    w.q_norm = b.vec(p + "self_attn.q_norm.weight", L.head_dim);
    w.o_proj = b.matrix(p + "self_attn.o_proj.weight", H, qd);
    w.post_attention_norm = b.vec(p + "post_attention_layernorm.weight", H);
    w.pre_feedforward_norm = b.vec(p + "pre_feedforward_layernorm.weight", H);
    w.gate_proj = b.matrix(p + "mlp.gate_proj.weight", L.mlp_width, H);
    w.up_proj = b.matrix(p + "mlp.up_proj.weight", L.mlp_width, H);
    w.down_proj = b.matrix(p + "mlp.down_proj.weight", H, L.mlp_width);
    w.post_feedforward_norm = b.vec(p + "post_feedforward_layernorm.weight", H);
    w.layer_scalar = b.vec(p + "layer_scalar", 1)[0];
    m->layers.push_back(std::move(w));
  }
  // Older exports may still carry unused K/V projections of the (all KV-shared) layers, and a
  // checkpoint without the centroid head may carry its tensors: both are ignored.
  std::set<std::string> skip = {"masked_embedding.centroids.weight", "masked_embedding.token_ordering"};
  skip.insert(extra_skip.begin(), extra_skip.end());
  for (int l = 0; l < t.num_layers; ++l)
    for (const char* n : {"self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.k_norm.weight"})
      skip.insert("layers." + std::to_string(l) + "." + n);
  b.refuse_unused(skip);
  m->convert_matrices(options);
  return m;
}

// The target's load-time conversions (model.cpp, Model::from_source) over the assistant's
// matrices, so they run on the same kernels: GGUF blocks -> the kernels' layouts, block
// types without a kernel -> Q8_0, and with WeightFormat::q4_0 float matrices -> q4_0. The
// centroid head reads candidate rows of the tied table (matmul_row_list), which the int8
// kernels cannot do, so that table stays as stored and runs on the float path; the dense
// head multiplies the whole table and is converted like the rest.
void AssistantModel::convert_matrices(const AssistantOptions& options) {
  const bool row_head = config_.ordered_embeddings;
  auto each = [this, row_head](const std::function<void(kernels::WeightMatrix&)>& fn) {
    for (AssistantLayerWeights& w : layers)
      for (kernels::WeightMatrix* x : {&w.q_proj, &w.o_proj, &w.gate_proj, &w.up_proj, &w.down_proj}) fn(*x);
    fn(pre_projection);
    fn(post_projection);
    if (centroids.rows > 0) fn(centroids);
    if (!row_head) fn(embed);
  };
  auto keep = [this](std::vector<kernels::Q4PackedBuffer> bufs) {
    for (auto& x : bufs) converted_.push_back(std::move(x));
  };
  keep(repack_gguf_blocks(each));
  if (options.activations != kernels::Q4Activations::f32) keep(convert_slow_gguf_blocks(each));
  if (options.weights == WeightFormat::q4_0) keep(quantize_weights_q4_0(each));
  each([&](kernels::WeightMatrix& w) { w.activations = options.activations; });
  if (row_head) embed.activations = kernels::Q4Activations::f32;
}

int AssistantModel::target_kv_layer(const ModelConfig& target, AttentionKind kind) {
  for (int l = target.num_layers - 1; l >= 0; --l) {
    const LayerConfig& L = target.layers[static_cast<std::size_t>(l)];
    if (L.kind == kind) return L.kv_source_layer;
  }
  return -1;
}

void AssistantModel::check_target(const ModelConfig& target) const {
  const AssistantConfig& c = config_;
  auto bad = [&](const auto&... why) { fail(c.source, ": this assistant does not fit the target model: ", why...); };
  if (c.backbone_hidden != target.hidden_size)
    bad("backbone_hidden_size ", c.backbone_hidden, " but the target's hidden_size is ", target.hidden_size);
  if (c.text.vocab_size != target.vocab_size)
    bad("vocab_size ", c.text.vocab_size, " but the target's is ", target.vocab_size);
  for (const LayerConfig& L : c.text.layers) {
    const int src = target_kv_layer(target, L.kind);
    if (src < 0) bad("it has a ", attention_kind_name(L.kind), " layer but the target has none");
    const LayerConfig& T = target.layers[static_cast<std::size_t>(src)];
    if (T.head_dim != L.head_dim)
      bad(attention_kind_name(L.kind), " head_dim ", L.head_dim, " but the target's is ", T.head_dim);
    if (c.text.num_heads % T.n_kv_heads)
      bad(c.text.num_heads, " attention heads do not divide over the target's ", T.n_kv_heads, " KV heads");
  }
  if (c.text.sliding_window != target.sliding_window)
    bad("sliding_window ", c.text.sliding_window, " but the target's is ", target.sliding_window);
}

AssistantStep::AssistantStep(std::shared_ptr<const AssistantModel> model, kernels::ParallelFor* pool)
    : model_(std::move(model)), pool_(pool) {
  const AssistantConfig& c = model_->config();
  const ModelConfig& t = c.text;
  int max_q = 0, max_ffn = 0, max_d = 0;
  for (const LayerConfig& L : t.layers) {
    max_q = std::max(max_q, t.num_heads * L.head_dim);
    max_ffn = std::max(max_ffn, L.mlp_width);
    max_d = std::max(max_d, L.head_dim);
  }
  const std::size_t H = static_cast<std::size_t>(t.hidden_size);
  h_.resize(H), a_.resize(H), o_.resize(H), f_.resize(H);
  q_.resize(static_cast<std::size_t>(max_q)), attn_.resize(static_cast<std::size_t>(max_q));
  gate_.resize(static_cast<std::size_t>(max_ffn)), up_.resize(static_cast<std::size_t>(max_ffn));
  rope_.resize(static_cast<std::size_t>(max_d));
  logits_.resize(static_cast<std::size_t>(t.vocab_size));
  h_next_.resize(static_cast<std::size_t>(c.backbone_hidden));
  if (c.ordered_embeddings) {
    centroid_logits_.resize(static_cast<std::size_t>(c.num_centroids));
    top_.resize(static_cast<std::size_t>(c.num_centroids));
    const std::size_t n = static_cast<std::size_t>(c.centroid_top_k) * (t.vocab_size / c.num_centroids);
    candidates_.resize(n), cand_logits_.resize(n);
  }
}

void AssistantStep::run(std::span<const float> x, std::int64_t position, const kernels::KvSlots& sliding,
                        const kernels::KvSlots& full) {
  using namespace kernels;
  const AssistantModel& m = *model_;
  const ModelConfig& t = m.config().text;
  const int H = t.hidden_size, nh = t.num_heads;
  const float eps = static_cast<float>(t.rms_norm_eps);
  if (static_cast<int>(x.size()) != 2 * m.config().backbone_hidden)
    fail("assistant step: input of ", x.size(), " values, expected ", 2 * m.config().backbone_hidden);
  matmul(m.pre_projection, x.data(), 1, h_.data(), pool_);
  for (int l = 0; l < t.num_layers; ++l) {
    const LayerConfig& L = t.layers[static_cast<std::size_t>(l)];
    const AssistantLayerWeights& w = m.layers[static_cast<std::size_t>(l)];
    const bool is_sliding = L.kind == AttentionKind::Sliding;
    const int d = L.head_dim;
    const KvSlots& kv = is_sliding ? sliding : full;
    if (kv.head_dim != d) fail("assistant step: layer ", l, " reads a cache of head_dim ", kv.head_dim, ", expected ", d);
    // Attention: queries only, against the target's cache, at the drafted token's position.
    rms_norm(h_.data(), w.input_norm.data(), H, eps, a_.data());
    matmul(w.q_proj, a_.data(), 1, q_.data(), pool_);
    const RopeConfig& rope = is_sliding ? t.rope_sliding : t.rope_full;
    rope_angles(rope.inv_freq.data(), d / 2, position, rope_.data());
    for (int h = 0; h < nh; ++h) {
      float* qh = q_.data() + static_cast<std::size_t>(h) * d;
      rms_norm(qh, w.q_norm.data(), d, eps, qh);
      rope_apply(qh, d, rope_.data());
    }
    attend(q_.data(), 1, &position, nh, kv, is_sliding ? t.sliding_window : 0, 1.0f, attn_.data(), pool_);
    matmul(w.o_proj, attn_.data(), 1, o_.data(), pool_);
    rms_norm(o_.data(), w.post_attention_norm.data(), H, eps, o_.data());
    add_inplace(h_.data(), o_.data(), H);
    // MLP.
    rms_norm(h_.data(), w.pre_feedforward_norm.data(), H, eps, a_.data());
    matmul(w.gate_proj, a_.data(), 1, gate_.data(), pool_);
    matmul(w.up_proj, a_.data(), 1, up_.data(), pool_);
    gelu_mul(gate_.data(), up_.data(), L.mlp_width, gate_.data());
    matmul(w.down_proj, gate_.data(), 1, o_.data(), pool_);
    rms_norm(o_.data(), w.post_feedforward_norm.data(), H, eps, o_.data());
    add_inplace(h_.data(), o_.data(), H);
    scale_inplace(h_.data(), H, w.layer_scalar);
  }
  rms_norm(h_.data(), m.final_norm.data(), H, eps, f_.data());
  head();
  matmul(m.post_projection, f_.data(), 1, h_next_.data(), pool_);
}

void AssistantStep::head() {
  const AssistantModel& m = *model_;
  const AssistantConfig& c = m.config();
  if (!c.ordered_embeddings) {
    kernels::matmul(m.embed, f_.data(), 1, logits_.data(), pool_);
    return;
  }
  // Centroid head: the top-k centroids' tokens (k * V / C of them) get their logits; every
  // other token gets (their minimum - 1), as the reference scatters them.
  kernels::matmul(m.centroids, f_.data(), 1, centroid_logits_.data(), pool_);
  for (int i = 0; i < c.num_centroids; ++i) top_[static_cast<std::size_t>(i)] = i;
  const float* cl = centroid_logits_.data();
  std::partial_sort(top_.begin(), top_.begin() + c.centroid_top_k, top_.end(), [cl](std::int32_t a, std::int32_t b) {
    return cl[a] > cl[b] || (cl[a] == cl[b] && a < b);
  });
  const std::size_t per = static_cast<std::size_t>(c.text.vocab_size / c.num_centroids);
  for (int j = 0; j < c.centroid_top_k; ++j)
    std::copy_n(m.token_ordering.data() + static_cast<std::size_t>(top_[static_cast<std::size_t>(j)]) * per, per,
                candidates_.data() + static_cast<std::size_t>(j) * per);
  kernels::matmul_row_list(m.embed, f_.data(), candidates_.data(), candidates_.size(), cand_logits_.data(), pool_);
  const float low = *std::min_element(cand_logits_.begin(), cand_logits_.end()) - 1.0f;
  std::fill(logits_.begin(), logits_.end(), low);
  for (std::size_t i = 0; i < candidates_.size(); ++i) logits_[static_cast<std::size_t>(candidates_[i])] = cand_logits_[i];
}

std::int32_t AssistantStep::argmax() const {
  return static_cast<std::int32_t>(std::max_element(logits_.begin(), logits_.end()) - logits_.begin());
}

}  // namespace ringlm::model
