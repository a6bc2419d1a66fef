#include "model/tensor_manifest.h"

#include <array>
#include <charconv>
#include <type_traits>

namespace ringlm::model {

namespace {

using K = TensorKind;
using P = Presence;
using D = Dim;
using MW = ModelWeights;
using LW = LayerWeights;

// clang-format off
// The whole-model tensors. packed_slot orders the tail of weights.rlpk (after the layers);
// the two embedding tables go to the int8 sidecar instead (packed_format.h).
const std::array<TensorEntry, 6> kGlobal = {{
    {"embed_tokens.weight",               "token_embd.weight",           nullptr, K::embedding, P::always, D::vocab,     D::hidden,    -1, &MW::embed_tokens},
    {"embed_tokens_per_layer.weight",     "per_layer_token_embd.weight", nullptr, K::ple_table, P::ple,    D::ple_vocab, D::ple_total, -1, &MW::embed_tokens_ple},
    {"per_layer_model_projection.weight", "per_layer_model_proj.weight", nullptr, K::linear,    P::ple,    D::ple_total, D::hidden,     0, &MW::ple_model_projection},
    {"lm_head.weight",                    "output.weight",               nullptr, K::linear,    P::head,   D::vocab,     D::hidden,     1, &MW::lm_head},
    {"per_layer_projection_norm.weight",  "per_layer_proj_norm.weight",  nullptr, K::norm,      P::ple,    D::ple_dim,   D::none,       3, &MW::ple_projection_norm},
    {"norm.weight",                       "output_norm.weight",          nullptr, K::norm,      P::always, D::hidden,    D::none,       2, &MW::final_norm},
}};

// The tensors of each layer. packed_slot: the linear matrices first, then the vectors.
const std::array<TensorEntry, 17> kLayer = {{
    {"input_layernorm.weight",            "attn_norm.weight",           "attn_pre_norm.weight", K::norm,   P::always, D::hidden,   D::none,    9, &LW::input_norm},
    {"self_attn.q_proj.weight",           "attn_q.weight",              nullptr,                K::linear, P::always, D::q_out,    D::hidden,  0, &LW::q_proj},
    {"self_attn.k_proj.weight",           "attn_k.weight",              nullptr,                K::linear, P::own_kv, D::kv_out,   D::hidden,  1, &LW::k_proj},
    {"self_attn.v_proj.weight",           "attn_v.weight",              nullptr,                K::linear, P::own_kv, D::kv_out,   D::hidden,  2, &LW::v_proj},
    {"self_attn.q_norm.weight",           "attn_q_norm.weight",         nullptr,                K::norm,   P::always, D::head_dim, D::none,   13, &LW::q_norm},
    {"self_attn.k_norm.weight",           "attn_k_norm.weight",         nullptr,                K::norm,   P::own_kv, D::head_dim, D::none,   14, &LW::k_norm},
    {"self_attn.o_proj.weight",           "attn_output.weight",         nullptr,                K::linear, P::always, D::hidden,   D::q_out,   3, &LW::o_proj},
    {"post_attention_layernorm.weight",   "post_attention_norm.weight", nullptr,                K::norm,   P::always, D::hidden,   D::none,   10, &LW::post_attention_norm},
    {"pre_feedforward_layernorm.weight",  "ffn_norm.weight",            "ffn_pre_norm.weight",  K::norm,   P::always, D::hidden,   D::none,   11, &LW::pre_feedforward_norm},
    {"mlp.gate_proj.weight",              "ffn_gate.weight",            nullptr,                K::linear, P::always, D::mlp,      D::hidden,  4, &LW::gate_proj},
    {"mlp.up_proj.weight",                "ffn_up.weight",              nullptr,                K::linear, P::always, D::mlp,      D::hidden,  5, &LW::up_proj},
    {"mlp.down_proj.weight",              "ffn_down.weight",            nullptr,                K::linear, P::always, D::hidden,   D::mlp,     6, &LW::down_proj},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight",       nullptr,                K::norm,   P::always, D::hidden,   D::none,   12, &LW::post_feedforward_norm},
    {"per_layer_input_gate.weight",       "inp_gate.weight",            nullptr,                K::linear, P::ple,    D::ple_dim,  D::hidden,  7, &LW::ple_gate},
    {"per_layer_projection.weight",       "proj.weight",                nullptr,                K::linear, P::ple,    D::hidden,   D::ple_dim, 8, &LW::ple_projection},
    {"post_per_layer_input_norm.weight",  "post_norm.weight",           nullptr,                K::norm,   P::ple,    D::hidden,   D::none,   15, &LW::post_ple_norm},
    {"layer_scalar",                      "layer_output_scale.weight",  nullptr,                K::scalar, P::always, D::one,      D::none,   16, &LW::layer_scalar},
}};
// clang-format on

// GGUF only: llama.cpp's encoding of the partial rotary factor (io::gemma4_rope_freqs); it
// has no Hugging Face counterpart and keeps its name.
constexpr char kRopeFreqs[] = "rope_freqs.weight";

std::int64_t dim(Dim d, const ModelConfig& c, const LayerConfig* L) {
  switch (d) {
    case Dim::none: return 0;
    case Dim::one: return 1;
    case Dim::hidden: return c.hidden_size;
    case Dim::vocab: return c.vocab_size;
    case Dim::ple_vocab: return c.ple_vocab_size;
    case Dim::ple_dim: return c.ple_dim;
    case Dim::ple_total: return static_cast<std::int64_t>(c.num_layers) * c.ple_dim;
    case Dim::q_out: return static_cast<std::int64_t>(c.num_heads) * L->head_dim;
    case Dim::kv_out: return static_cast<std::int64_t>(L->n_kv_heads) * L->head_dim;
    case Dim::head_dim: return L->head_dim;
    case Dim::mlp: return L->mlp_width;
  }
  return 0;
}

bool present(Presence p, const ModelConfig& c, const LayerConfig* L) {
  switch (p) {
    case Presence::always: return true;
    case Presence::own_kv: return L->owns_kv;
    case Presence::ple: return c.ple_dim > 0;
    case Presence::head: return !c.tie_word_embeddings;
  }
  return false;
}

ManifestTensor make(const TensorEntry& e, const ModelConfig& c, int layer) {
  const LayerConfig* L = layer >= 0 ? &c.layers[layer] : nullptr;
  ManifestTensor t;
  t.entry = &e;
  t.layer = layer;
  t.name = layer >= 0 ? "layers." + std::to_string(layer) + "." + e.name : std::string(e.name);
  t.shape = {dim(e.rows, c, L)};
  if (e.cols != Dim::none) t.shape.push_back(dim(e.cols, c, L));
  t.present = present(e.presence, c, L);
  return t;
}

// The member of `w` an entry names, for a layer (ignored for whole-model entries).
template <typename T, typename W>
auto member(W& w, const TensorEntry& e, int layer) -> std::conditional_t<std::is_const_v<W>, const T*, T*> {
  using Ptr = std::conditional_t<std::is_const_v<W>, const T*, T*>;
  return std::visit(
      [&](auto m) -> Ptr {
        using M = decltype(m);
        if constexpr (std::is_same_v<M, T ModelWeights::*>) return &(w.*m);
        else if constexpr (std::is_same_v<M, T LayerWeights::*>) return &(w.layers[static_cast<std::size_t>(layer)].*m);
        else return nullptr;
      },
      e.member);
}

// Splits "<prefix><N>.<rest>" into N and rest; false if the name does not have that form.
bool split_layer(std::string_view name, std::string_view prefix, int* layer, std::string_view* rest) {
  if (name.substr(0, prefix.size()) != prefix) return false;
  name.remove_prefix(prefix.size());
  const auto dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 6) return false;
  const auto digits = name.substr(0, dot);
  if (digits.size() > 1 && digits[0] == '0') return false;  // one spelling per layer
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *layer);
  if (ec != std::errc() || p != digits.data() + digits.size()) return false;
  *rest = name.substr(dot + 1);
  return true;
}

}  // namespace

std::span<const TensorEntry> global_tensor_entries() { return kGlobal; }
std::span<const TensorEntry> layer_tensor_entries() { return kLayer; }

std::vector<ManifestTensor> manifest_tensors(const ModelConfig& c) {
  std::vector<ManifestTensor> out;
  out.reserve(kGlobal.size() + kLayer.size() * static_cast<std::size_t>(c.num_layers));
  for (const TensorEntry& e : kGlobal) out.push_back(make(e, c, -1));
  for (int l = 0; l < c.num_layers; ++l)
    for (const TensorEntry& e : kLayer) out.push_back(make(e, c, l));
  return out;
}

WeightMatrix* matrix_of(ModelWeights& w, const ManifestTensor& t) { return member<WeightMatrix>(w, *t.entry, t.layer); }
const WeightMatrix* matrix_of(const ModelWeights& w, const ManifestTensor& t) {
  return member<WeightMatrix>(w, *t.entry, t.layer);
}
std::vector<float>* vector_of(ModelWeights& w, const ManifestTensor& t) {
  return member<std::vector<float>>(w, *t.entry, t.layer);
}
const std::vector<float>* vector_of(const ModelWeights& w, const ManifestTensor& t) {
  return member<std::vector<float>>(w, *t.entry, t.layer);
}
float* scalar_of(ModelWeights& w, const ManifestTensor& t) { return member<float>(w, *t.entry, t.layer); }
const float* scalar_of(const ModelWeights& w, const ManifestTensor& t) { return member<float>(w, *t.entry, t.layer); }

const char* tensor_name(WeightMatrix ModelWeights::* m) {
  for (const TensorEntry& e : kGlobal)
    if (e.member == TensorMember(m)) return e.name;
  return "?";
}

void for_each_matrix(ModelWeights& w, MatrixSet set, const std::function<void(WeightMatrix&)>& fn) {
  auto wanted = [&](const TensorEntry& e) {
    return set == MatrixSet::all ? e.kind == K::linear || e.kind == K::embedding || e.kind == K::ple_table
                                 : e.kind == K::linear;
  };
  for (LayerWeights& lw : w.layers)
    for (const TensorEntry& e : kLayer)
      if (wanted(e)) fn(lw.*std::get<WeightMatrix LayerWeights::*>(e.member));
  for (const TensorEntry& e : kGlobal)
    if (wanted(e)) fn(w.*std::get<WeightMatrix ModelWeights::*>(e.member));
}

std::optional<std::string> gemma4_canonical_name(std::string_view gguf_name) {
  for (const TensorEntry& e : kGlobal)
    if (gguf_name == e.gguf) return std::string(e.name);
  if (gguf_name == kRopeFreqs) return std::string(kRopeFreqs);
  int layer;
  std::string_view rest;
  if (split_layer(gguf_name, "blk.", &layer, &rest))
    for (const TensorEntry& e : kLayer)
      if (rest == e.gguf || (e.gguf_alias && rest == e.gguf_alias)) return "layers." + std::to_string(layer) + "." + e.name;
  return std::nullopt;
}

std::optional<std::string> gemma4_gguf_name(std::string_view canonical_name) {
  for (const TensorEntry& e : kGlobal)
    if (canonical_name == e.name) return std::string(e.gguf);
  if (canonical_name == kRopeFreqs) return std::string(kRopeFreqs);
  int layer;
  std::string_view rest;
  if (split_layer(canonical_name, "layers.", &layer, &rest))
    for (const TensorEntry& e : kLayer)
      if (rest == e.name) return "blk." + std::to_string(layer) + "." + e.gguf;
  return std::nullopt;
}

std::unique_ptr<io::GgufTensorSource> gguf_tensor_source(std::shared_ptr<const io::GgufFile> file) {
  return std::make_unique<io::GgufTensorSource>(std::move(file), gemma4_canonical_name);
}

}  // namespace ringlm::model
