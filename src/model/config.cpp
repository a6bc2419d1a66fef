#include "model/config.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.h"

namespace ringlm::model {
namespace {

using json = nlohmann::json;

// Reads typed fields of one JSON object, naming config.json and the field on any error.
class Fields {
 public:
  Fields(const json& obj, std::string source, std::string path)
      : obj_(obj), source_(std::move(source)), path_(std::move(path)) {}

  [[noreturn]] void bad(const std::string& field, const std::string& why) const {
    fail_model_file(source_, ": field ", path_, field, ": ", why);
  }
  bool has(const std::string& field) const { return obj_.contains(field) && !obj_[field].is_null(); }

  long long integer(const std::string& field, long long min, long long max) const {
    if (!has(field)) bad(field, "missing");
    return integer_value(field, min, max);
  }
  long long integer_or(const std::string& field, long long fallback, long long min, long long max) const {
    return has(field) ? integer_value(field, min, max) : fallback;
  }
  double number_or(const std::string& field, double fallback, double min, double max) const {
    if (!has(field)) return fallback;
    const json& v = obj_[field];
    if (!v.is_number()) bad(field, "expected a number");
    double d = v.get<double>();
    if (!std::isfinite(d) || d < min || d > max) bad(field, "value " + v.dump() + " out of range");
    return d;
  }
  bool boolean_or(const std::string& field, bool fallback) const {
    if (!has(field)) return fallback;
    if (!obj_[field].is_boolean()) bad(field, "expected true or false");
    return obj_[field].get<bool>();
  }
  const json& raw(const std::string& field) const { return obj_[field]; }

 private:
  long long integer_value(const std::string& field, long long min, long long max) const {
    const json& v = obj_[field];
    if (!v.is_number_integer()) bad(field, "expected an integer, got " + v.dump());
    long long n = v.get<long long>();
    if (n < min || n > max)
      bad(field, "value " + std::to_string(n) + " out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return n;
  }
  const json& obj_;
  std::string source_;
  std::string path_;
};

constexpr long long kMaxDim = 1 << 20;

RopeConfig parse_rope(const Fields& top, const json& params, const std::string& kind, int head_dim) {
  const std::string where = "rope_parameters." + kind;
  if (!params.is_object()) top.bad(where, "expected an object");
  Fields f(params, "", "");
  RopeConfig r;
  auto bad = [&](const std::string& field, const std::string& why) { top.bad(where + "." + field, why); };
  if (!params.contains("rope_type") || !params["rope_type"].is_string()) bad("rope_type", "missing or not a string");
  r.type = params["rope_type"].get<std::string>();
  auto number = [&](const char* field, double fallback, double lo, double hi) {
    if (!params.contains(field) || params[field].is_null()) return fallback;
    if (!params[field].is_number()) bad(field, "expected a number");
    double d = params[field].get<double>();
    if (!std::isfinite(d) || d < lo || d > hi) bad(field, "value " + params[field].dump() + " out of range");
    return d;
  };
  if (!params.contains("rope_theta")) bad("rope_theta", "missing");
  r.theta = number("rope_theta", 0, 1.0, 1e12);
  r.partial_rotary_factor = number("partial_rotary_factor", 1.0, 0.0, 1.0);
  r.factor = number("factor", 1.0, 1e-6, 1e6);
  r.inv_freq.assign(head_dim / 2, 0.0);
  if (r.type == "default") {
    // A partial default rotation would rotate a prefix with its own pairing; Gemma 4 never uses it.
    if (r.partial_rotary_factor != 1.0) bad("partial_rotary_factor", "only 1.0 is supported with rope_type default");
    for (int i = 0; i < head_dim / 2; ++i) r.inv_freq[i] = std::pow(r.theta, -2.0 * i / head_dim) / r.factor;
  } else if (r.type == "proportional") {
    // Frequencies keep the full head_dim in the exponent; pairs past the rotated share stay still.
    const int rotated = static_cast<int>(std::floor(r.partial_rotary_factor * head_dim / 2.0));
    for (int i = 0; i < rotated && i < head_dim / 2; ++i)
      r.inv_freq[i] = std::pow(r.theta, -2.0 * i / head_dim) / r.factor;
  } else {
    bad("rope_type", "unsupported value '" + r.type + "' (ringlm supports default and proportional)");
  }
  return r;
}

}  // namespace

const char* attention_kind_name(AttentionKind k) { return k == AttentionKind::Sliding ? "sliding" : "full"; }

ModelConfig& ModelConfig::operator=(const ModelConfig& other) {
  if (this == &other) return *this;
  source = other.source;
  vocab_size = other.vocab_size; hidden_size = other.hidden_size; intermediate_size = other.intermediate_size;
  num_layers = other.num_layers; num_heads = other.num_heads; num_kv_heads = other.num_kv_heads;
  num_global_kv_heads = other.num_global_kv_heads; head_dim = other.head_dim; global_head_dim = other.global_head_dim;
  num_kv_shared_layers = other.num_kv_shared_layers; use_double_wide_mlp = other.use_double_wide_mlp;
  ple_dim = other.ple_dim; ple_vocab_size = other.ple_vocab_size;
  final_logit_softcapping = other.final_logit_softcapping; sliding_window = other.sliding_window;
  max_position_embeddings = other.max_position_embeddings; rms_norm_eps = other.rms_norm_eps;
  tie_word_embeddings = other.tie_word_embeddings; bos_token_id = other.bos_token_id;
  pad_token_id = other.pad_token_id; eos_token_ids = other.eos_token_ids;
  rope_sliding = other.rope_sliding; rope_full = other.rope_full;
  layers = other.layers;
  for (auto& l : layers) l.rope = l.kind == AttentionKind::Sliding ? &rope_sliding : &rope_full;
  return *this;
}

ModelConfig parse_model_config(const std::string& text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    fail_model_file(source, ": not valid JSON: ", e.what());
  }
  if (!doc.is_object()) fail_model_file(source, ": expected a JSON object");
  const bool nested = doc.contains("text_config");
  if (nested && !doc["text_config"].is_object()) fail_model_file(source, ": field text_config: expected an object");
  const json& tc = nested ? doc["text_config"] : doc;
  Fields f(tc, source, nested ? "text_config." : "");

  ModelConfig c;
  c.source = source;
  c.hidden_size = static_cast<int>(f.integer("hidden_size", 1, kMaxDim));
  c.intermediate_size = static_cast<int>(f.integer("intermediate_size", 1, kMaxDim));
  c.num_layers = static_cast<int>(f.integer("num_hidden_layers", 1, 4096));
  c.num_heads = static_cast<int>(f.integer("num_attention_heads", 1, 4096));
  c.num_kv_heads = static_cast<int>(f.integer("num_key_value_heads", 1, 4096));
  c.vocab_size = static_cast<int>(f.integer_or("vocab_size", 262144, 1, 1 << 24));
  c.head_dim = static_cast<int>(f.integer_or("head_dim", 256, 2, 1 << 14));
  c.global_head_dim = static_cast<int>(f.integer_or("global_head_dim", 512, 2, 1 << 14));
  if (c.head_dim % 2) f.bad("head_dim", "must be even");
  if (c.global_head_dim % 2) f.bad("global_head_dim", "must be even");
  if (c.num_heads % c.num_kv_heads) f.bad("num_key_value_heads", "must divide num_attention_heads");
  c.num_global_kv_heads = c.num_kv_heads;
  if (f.boolean_or("attention_k_eq_v", false)) f.bad("attention_k_eq_v", "true is not supported");
  if (f.boolean_or("enable_moe_block", false)) f.bad("enable_moe_block", "true is not supported");
  if (f.has("use_bidirectional_attention")) f.bad("use_bidirectional_attention", "only null is supported");
  c.num_kv_shared_layers = static_cast<int>(f.integer_or("num_kv_shared_layers", 0, 0, c.num_layers - 1));
  c.use_double_wide_mlp = f.boolean_or("use_double_wide_mlp", false);
  c.ple_dim = static_cast<int>(f.integer_or("hidden_size_per_layer_input", 256, 0, kMaxDim));
  c.ple_vocab_size = static_cast<int>(f.integer_or("vocab_size_per_layer_input", 262144, 0, 1 << 24));
  if (c.ple_dim > 0 && c.ple_vocab_size == 0) f.bad("vocab_size_per_layer_input", "must be positive when hidden_size_per_layer_input is");
  c.final_logit_softcapping = f.number_or("final_logit_softcapping", 0.0, 0.0, 1e6);
  c.sliding_window = static_cast<int>(f.integer_or("sliding_window", 512, 1, 1 << 24));
  c.max_position_embeddings = static_cast<int>(f.integer_or("max_position_embeddings", 131072, 1, 1 << 26));
  c.rms_norm_eps = f.number_or("rms_norm_eps", 1e-6, 0.0, 1.0);
  c.tie_word_embeddings = f.boolean_or("tie_word_embeddings", doc.value("tie_word_embeddings", true));
  if (f.has("hidden_activation") &&
      (!f.raw("hidden_activation").is_string() || f.raw("hidden_activation").get<std::string>() != "gelu_pytorch_tanh"))
    f.bad("hidden_activation", "only gelu_pytorch_tanh is supported");
  c.bos_token_id = static_cast<int>(f.integer_or("bos_token_id", doc.value("bos_token_id", 2), 0, 1 << 24));
  c.pad_token_id = static_cast<int>(f.integer_or("pad_token_id", doc.value("pad_token_id", 0), 0, 1 << 24));
  // eos_token_id: an id or a list of ids, in the text config or at the top level.
  const json* eos = f.has("eos_token_id") ? &tc["eos_token_id"] : (doc.contains("eos_token_id") ? &doc["eos_token_id"] : nullptr);
  if (eos && !eos->is_null()) {
    auto add = [&](const json& v) {
      if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() >= c.vocab_size)
        f.bad("eos_token_id", "expected token ids below vocab_size, got " + v.dump());
      c.eos_token_ids.push_back(v.get<int>());
    };
    if (eos->is_array()) for (const json& v : *eos) add(v);
    else add(*eos);
  } else {
    c.eos_token_ids = {1};
  }

  if (!f.has("layer_types") || !f.raw("layer_types").is_array()) f.bad("layer_types", "missing or not a list");
  const json& types = f.raw("layer_types");
  if (static_cast<int>(types.size()) != c.num_layers)
    f.bad("layer_types", "has " + std::to_string(types.size()) + " entries but num_hidden_layers is " + std::to_string(c.num_layers));

  if (!f.has("rope_parameters") || !f.raw("rope_parameters").is_object()) f.bad("rope_parameters", "missing or not an object");
  const json& rope = f.raw("rope_parameters");
  bool any_sliding = false, any_full = false;
  for (const json& t : types) {
    if (t == "sliding_attention") any_sliding = true;
    else if (t == "full_attention") any_full = true;
    else f.bad("layer_types", "unsupported entry " + t.dump() + " (expected sliding_attention or full_attention)");
  }
  if (any_sliding) {
    if (!rope.contains("sliding_attention")) f.bad("rope_parameters.sliding_attention", "missing");
    c.rope_sliding = parse_rope(f, rope["sliding_attention"], "sliding_attention", c.head_dim);
  }
  if (any_full) {
    if (!rope.contains("full_attention")) f.bad("rope_parameters.full_attention", "missing");
    c.rope_full = parse_rope(f, rope["full_attention"], "full_attention", c.global_head_dim);
  }

  const int first_shared = c.first_shared_layer();
  c.layers.resize(c.num_layers);
  for (int l = 0; l < c.num_layers; ++l) {
    LayerConfig& L = c.layers[l];
    L.kind = types[l] == "sliding_attention" ? AttentionKind::Sliding : AttentionKind::Full;
    L.head_dim = L.kind == AttentionKind::Sliding ? c.head_dim : c.global_head_dim;
    L.n_kv_heads = L.kind == AttentionKind::Sliding ? c.num_kv_heads : c.num_global_kv_heads;
    L.owns_kv = l < first_shared;
    L.mlp_width = (!L.owns_kv && c.use_double_wide_mlp) ? 2 * c.intermediate_size : c.intermediate_size;
    L.kv_source_layer = l;
    if (!L.owns_kv) {
      // A shared layer reads the last owning layer of its own attention kind.
      L.kv_source_layer = -1;
      for (int s = first_shared - 1; s >= 0; --s)
        if (c.layers[s].kind == L.kind) { L.kv_source_layer = s; break; }
      if (L.kv_source_layer < 0)
        f.bad("num_kv_shared_layers", std::string("layer ") + std::to_string(l) + " is a shared " +
                                         attention_kind_name(L.kind) + " layer but no earlier layer of that kind owns a KV cache");
    }
  }
  for (auto& L : c.layers) L.rope = L.kind == AttentionKind::Sliding ? &c.rope_sliding : &c.rope_full;
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& dir) {
  const auto path = dir / "config.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_io(path.string(), ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_model_config(ss.str(), path.string());
}

}  // namespace ringlm::model
