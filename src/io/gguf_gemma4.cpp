#include "io/gguf_gemma4.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "io/gguf_writer.h"
#include "util/error.h"

namespace ringlm::io {

// ---------------------------------------------------------------------------------------

namespace {

void require_arch(const GgufFile& f, std::string_view want) {
  const auto arch = f.get_string("general.architecture");
  if (arch != want)
    fail_unsupported(f.path(), ": general.architecture is '", arch, "'; expected '", want, "'",
                     want == "gemma4" ? " (ringlm reads only 'gemma4' model GGUF files)" : "");
}

}  // namespace

GgufTensorSource::GgufTensorSource(std::shared_ptr<const GgufFile> file, const GgufNameMap& canonical_name,
                                   std::string_view arch, bool integer_tables)
    : file_(std::move(file)) {
  const GgufFile& f = *file_;
  require_arch(f, arch);
  for (const auto& t : f.tensors()) {
    auto canonical = canonical_name(t.name);
    if (!canonical) {
      unmapped_.push_back(t.name);
      continue;
    }
    const GgmlTypeInfo& info = t.type_info();
    std::optional<DType> dtype = info.dtype;
    if (integer_tables && (t.type == 26 || t.type == 27)) dtype = t.type == 26 ? DType::I32 : DType::I64;
    if (!dtype)
      fail_unsupported(f.path(), ": tensor '", t.name, "' has type ", info.name,
           ", which ringlm does not support (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, "
           "Q6_K, IQ4_NL, IQ4_XS, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M; docs/gguf.md)");
    if (index_.count(*canonical))
      fail_model_file(f.path(), ": tensors '", t.name, "' and '", gguf_names_[index_[*canonical]],
           "' both map to '", *canonical, "'");
    TensorView v;
    v.name = *canonical;
    v.dtype = *dtype;
    v.shape.assign(t.ne.rbegin(), t.ne.rend());  // ggml {in, out} -> PyTorch [out, in]
    v.data = t.data;
    v.nbytes = t.nbytes;
    v.file = f.path();
    index_.emplace(v.name, views_.size());
    views_.push_back(std::move(v));
    gguf_names_.push_back(t.name);
  }
}

std::unique_ptr<GgufTensorSource> GgufTensorSource::open(const std::filesystem::path& path,
                                                         const GgufNameMap& canonical_name, std::string_view arch,
                                                         bool integer_tables) {
  return std::make_unique<GgufTensorSource>(std::make_shared<GgufFile>(path), canonical_name, arch, integer_tables);
}

const TensorView* GgufTensorSource::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &views_[it->second];
}

std::vector<std::string> GgufTensorSource::names() const {
  std::vector<std::string> out;
  out.reserve(views_.size());
  for (const auto& v : views_) out.push_back(v.name);
  return out;
}

std::string GgufTensorSource::describe() const { return file_->path() + " (GGUF v" + std::to_string(file_->version()) + ")"; }

// ---------------------------------------------------------------------------------------
// Configuration

namespace {

// A per-layer hyperparameter stored either as one integer or as an array of n_layer.
std::vector<std::int64_t> per_layer_ints(const GgufFile& f, const std::string& key, std::int64_t n_layer) {
  const GgufValue* v = f.find(key);
  if (!v) fail_model_file(f.path(), ": metadata key '", key, "' is missing");
  if (v->type != GgufValueType::ARRAY) return std::vector<std::int64_t>(n_layer, f.get_int(key));
  auto values = v->arr.ints(f.path() + ": metadata key '" + key + "'");
  if (static_cast<std::int64_t>(values.size()) != n_layer)
    fail_model_file(f.path(), ": metadata key '", key, "' has ", values.size(), " entries for ", n_layer, " layers");
  return values;
}

std::int64_t uniform(const GgufFile& f, const std::string& key, const std::vector<std::int64_t>& v) {
  for (auto x : v)
    if (x != v[0]) fail_model_file(f.path(), ": metadata key '", key, "' varies across layers, which Gemma 4 does not do");
  return v[0];
}

std::int64_t positive(const GgufFile& f, const std::string& key, std::int64_t v, std::int64_t max = 1ll << 40) {
  if (v <= 0 || v > max) fail_model_file(f.path(), ": metadata key '", key, "' is ", v, ", out of range");
  return v;
}

// A float metadata value as the double its writer meant: GGUF stores these as f32, and
// the shortest decimal that round-trips (1e-06, not 9.99999997e-07) is what config.json has.
double as_written(const GgufFile& f, const std::string& key, double fallback) {
  const GgufValue* v = f.find(key);
  if (!v) return fallback;
  const double d = f.get_float(key);
  if (!std::isfinite(d)) fail(f.path(), ": metadata key '", key, "' is ", d, " (not a finite number)");
  if (v->type != GgufValueType::F32) return d;
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf - 1, static_cast<float>(d));
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

// Fraction of the head dim that rope_freqs leaves rotating: llama.cpp encodes Gemma 4's
// proportional RoPE as frequency factors 1.0 for rotated pairs and 1e30 for the rest.
double partial_rotary_factor(const GgufFile& f, std::int64_t head_dim) {
  const GgufTensorInfo* t = f.find_tensor("rope_freqs.weight");
  if (!t) return 1.0;
  if (t->type != 0 || t->ne.size() != 1 || t->ne[0] != head_dim / 2)
    fail_model_file(f.path(), ": tensor 'rope_freqs.weight' should be F32 of ", head_dim / 2, " values (key_length / 2), is ",
         ggml_type_name(t->type), " with ", t->numel(), " values");
  std::int64_t rotated = 0;
  for (std::int64_t k = 0; k < t->ne[0]; ++k) {
    float ff;
    std::memcpy(&ff, t->data + 4 * k, 4);
    if (ff == 1.0f && rotated == k) {
      ++rotated;
    } else if (!(ff >= 1e20f)) {
      fail_model_file(f.path(), ": tensor 'rope_freqs.weight' value ", k, " is ", ff,
           "; only 1.0 (rotated) followed by huge values (not rotated) are supported");
    }
  }
  return 2.0 * static_cast<double>(rotated) / static_cast<double>(head_dim);
}

}  // namespace

nlohmann::json gemma4_text_config(const GgufFile& f, std::string_view arch) {
  require_arch(f, arch);
  const std::string p = std::string(arch) + ".";
  const std::int64_t n_layer = positive(f, p + "block_count", f.get_int(p + "block_count"), 1024);
  const std::int64_t hidden = positive(f, p + "embedding_length", f.get_int(p + "embedding_length"));

  const auto ffn = per_layer_ints(f, p + "feed_forward_length", n_layer);
  const std::int64_t n_head = positive(f, p + "attention.head_count",
                                       uniform(f, p + "attention.head_count", per_layer_ints(f, p + "attention.head_count", n_layer)));
  const std::int64_t n_kv_head = positive(f, p + "attention.head_count_kv",
                                          uniform(f, p + "attention.head_count_kv", per_layer_ints(f, p + "attention.head_count_kv", n_layer)));
  const std::int64_t shared = f.get_int_or(p + "attention.shared_kv_layers", 0);
  // A model owns the KV of its first layers; the assistant (another arch) owns none.
  if (shared < 0 || shared > n_layer || (shared == n_layer && arch == "gemma4"))
    fail_model_file(f.path(), ": metadata key '", p, "attention.shared_kv_layers' is ", shared, " for ", n_layer, " layers");

  // Gemma 4 doubles the MLP width of the KV-shared layers (use_double_wide_mlp); any other
  // per-layer pattern cannot be expressed in its config.
  const std::int64_t first_shared = n_layer - shared;
  const std::int64_t base_ffn = positive(f, p + "feed_forward_length", ffn[0]);
  const bool double_wide = shared > 0 && ffn[first_shared] == 2 * base_ffn;
  for (std::int64_t l = 0; l < n_layer; ++l) {
    const std::int64_t expected = (double_wide && l >= first_shared) ? 2 * base_ffn : base_ffn;
    if (ffn[l] != expected)
      fail_model_file(f.path(), ": metadata key '", p, "feed_forward_length' gives layer ", l, " width ", ffn[l],
           ", expected ", expected, " (Gemma 4 uses one width, doubled on KV-shared layers)");
  }

  const auto& pattern_arr = f.get_array(p + "attention.sliding_window_pattern");
  const auto pattern = pattern_arr.bools(f.path() + ": metadata key '" + p + "attention.sliding_window_pattern'");
  if (static_cast<std::int64_t>(pattern.size()) != n_layer)
    fail_model_file(f.path(), ": metadata key '", p, "attention.sliding_window_pattern' has ", pattern.size(),
         " entries for ", n_layer, " layers");
  nlohmann::json layer_types = nlohmann::json::array();
  for (bool sliding : pattern) layer_types.push_back(sliding ? "sliding_attention" : "full_attention");

  const std::int64_t head_dim_full = positive(f, p + "attention.key_length", f.get_int(p + "attention.key_length"));
  const std::int64_t head_dim_swa = positive(f, p + "attention.key_length_swa",
                                             f.get_int_or(p + "attention.key_length_swa", head_dim_full));
  if (f.get_int_or(p + "attention.value_length", head_dim_full) != head_dim_full ||
      f.get_int_or(p + "attention.value_length_swa", head_dim_swa) != head_dim_swa)
    fail_model_file(f.path(), ": value_length differs from key_length, which Gemma 4 does not do");
  if (head_dim_full % 2 || head_dim_swa % 2) fail_model_file(f.path(), ": head dimensions must be even");

  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd || embd->ne.size() != 2) fail_model_file(f.path(), ": tensor 'token_embd.weight' is missing or not 2-D");
  if (embd->ne[0] != hidden)
    fail_model_file(f.path(), ": tensor 'token_embd.weight' has rows of ", embd->ne[0], ", embedding_length is ", hidden);

  nlohmann::json c;
  c["model_type"] = "gemma4_text";
  c["architectures"] = {"Gemma4ForCausalLM"};
  c["vocab_size"] = embd->ne[1];
  c["hidden_size"] = hidden;
  c["num_hidden_layers"] = n_layer;
  c["num_attention_heads"] = n_head;
  c["num_key_value_heads"] = n_kv_head;
  c["head_dim"] = head_dim_swa;
  c["global_head_dim"] = head_dim_full;
  c["intermediate_size"] = base_ffn;
  c["use_double_wide_mlp"] = double_wide;
  c["num_kv_shared_layers"] = shared;
  c["layer_types"] = layer_types;
  c["sliding_window"] = f.get_int_or(p + "attention.sliding_window", 512);
  c["max_position_embeddings"] = f.get_int_or(p + "context_length", 131072);
  c["rms_norm_eps"] = as_written(f, p + "attention.layer_norm_rms_epsilon", 1e-6);
  c["hidden_activation"] = "gelu_pytorch_tanh";
  if (const GgufValue* sc = f.find(p + "final_logit_softcapping"); sc)
    c["final_logit_softcapping"] = as_written(f, p + "final_logit_softcapping", 0.0);
  else
    c["final_logit_softcapping"] = nullptr;
  c["hidden_size_per_layer_input"] = f.get_int_or(p + "embedding_length_per_layer_input", 0);
  if (const GgufTensorInfo* ple = f.find_tensor("per_layer_token_embd.weight"); ple && ple->ne.size() == 2)
    c["vocab_size_per_layer_input"] = ple->ne[1];
  c["tie_word_embeddings"] = f.find_tensor("output.weight") == nullptr;
  c["rope_parameters"] = {
      {"sliding_attention",
       {{"rope_type", "default"}, {"rope_theta", as_written(f, p + "rope.freq_base_swa", 10000.0)}}},
      {"full_attention",
       {{"rope_type", "proportional"},
        {"rope_theta", as_written(f, p + "rope.freq_base", 1000000.0)},
        {"partial_rotary_factor", partial_rotary_factor(f, head_dim_full)}}},
  };
  for (const char* id : {"bos", "eos", "padding"}) {
    const std::string key = std::string("tokenizer.ggml.") + id + "_token_id";
    if (f.find(key))
      c[std::string(id == std::string("padding") ? "pad" : id) + "_token_id"] = f.get_int(key);
  }
  return c;
}

// ---------------------------------------------------------------------------------------
// Writing

namespace {

template <typename T>
T cfg(const nlohmann::json& c, const char* key) {
  if (!c.contains(key) || c[key].is_null()) fail_model_file("gemma4 config: '", key, "' is missing");
  try {
    return c[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    fail_model_file("gemma4 config: '", key, "' has the wrong type");
  }
}

}  // namespace

std::vector<float> gemma4_rope_freqs(const nlohmann::json& c) {
  const auto head_dim = cfg<std::int64_t>(c, "global_head_dim");
  double factor = 1.0;
  if (c.contains("rope_parameters") && c["rope_parameters"].contains("full_attention")) {
    const auto& full = c["rope_parameters"]["full_attention"];
    if (full.contains("partial_rotary_factor")) factor = full["partial_rotary_factor"].get<double>();
  }
  if (factor >= 1.0) return {};
  const auto rotated = static_cast<std::int64_t>(factor * static_cast<double>(head_dim) / 2.0);
  std::vector<float> ff(static_cast<std::size_t>(head_dim / 2), 1e30f);
  for (std::int64_t k = 0; k < rotated; ++k) ff[static_cast<std::size_t>(k)] = 1.0f;
  return ff;
}

void gemma4_write_metadata(GgufWriter& w, const nlohmann::json& c, std::string_view arch) {
  const std::string p = std::string(arch) + ".";
  const auto n_layer = cfg<std::int64_t>(c, "num_hidden_layers");
  const auto shared = c.value("num_kv_shared_layers", std::int64_t{0});
  const auto ffn = cfg<std::int64_t>(c, "intermediate_size");
  const bool double_wide = c.value("use_double_wide_mlp", false);
  const auto layer_types = cfg<std::vector<std::string>>(c, "layer_types");
  if (static_cast<std::int64_t>(layer_types.size()) != n_layer)
    fail_model_file("gemma4 config: layer_types has ", layer_types.size(), " entries for ", n_layer, " layers");
  std::vector<std::uint32_t> widths;
  std::vector<bool> sliding;
  for (std::int64_t l = 0; l < n_layer; ++l) {
    widths.push_back(static_cast<std::uint32_t>(double_wide && l >= n_layer - shared ? 2 * ffn : ffn));
    sliding.push_back(layer_types[static_cast<std::size_t>(l)] == "sliding_attention");
  }
  const auto head_dim = cfg<std::int64_t>(c, "head_dim");
  const auto global_head_dim = c.value("global_head_dim", head_dim);
  double theta_full = 1e6, theta_swa = 1e4;
  if (c.contains("rope_parameters")) {
    const auto& rp = c["rope_parameters"];
    if (rp.contains("full_attention")) theta_full = rp["full_attention"].value("rope_theta", theta_full);
    if (rp.contains("sliding_attention")) theta_swa = rp["sliding_attention"].value("rope_theta", theta_swa);
  }
  auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
  w.add_string("general.architecture", arch);
  w.add_u32(p + "context_length", u32(c.value("max_position_embeddings", std::int64_t{131072})));
  w.add_u32(p + "embedding_length", u32(cfg<std::int64_t>(c, "hidden_size")));
  w.add_u32(p + "block_count", u32(n_layer));
  w.add_array_u32(p + "feed_forward_length", widths);
  w.add_u32(p + "attention.head_count", u32(cfg<std::int64_t>(c, "num_attention_heads")));
  w.add_u32(p + "attention.head_count_kv", u32(cfg<std::int64_t>(c, "num_key_value_heads")));
  w.add_u32(p + "attention.key_length", u32(global_head_dim));
  w.add_u32(p + "attention.value_length", u32(global_head_dim));
  w.add_u32(p + "attention.key_length_swa", u32(head_dim));
  w.add_u32(p + "attention.value_length_swa", u32(head_dim));
  w.add_u32(p + "rope.dimension_count", u32(global_head_dim));
  w.add_u32(p + "rope.dimension_count_swa", u32(head_dim));
  w.add_f32(p + "rope.freq_base", static_cast<float>(theta_full));
  w.add_f32(p + "rope.freq_base_swa", static_cast<float>(theta_swa));
  w.add_u32(p + "attention.sliding_window", u32(c.value("sliding_window", std::int64_t{512})));
  w.add_array_bool(p + "attention.sliding_window_pattern", sliding);
  w.add_u32(p + "attention.shared_kv_layers", u32(shared));
  w.add_u32(p + "embedding_length_per_layer_input", u32(c.value("hidden_size_per_layer_input", std::int64_t{0})));
  if (c.contains("final_logit_softcapping") && !c["final_logit_softcapping"].is_null())
    w.add_f32(p + "final_logit_softcapping", c["final_logit_softcapping"].get<float>());
  w.add_f32(p + "attention.layer_norm_rms_epsilon", c.value("rms_norm_eps", 1e-6f));
}

}  // namespace ringlm::io
