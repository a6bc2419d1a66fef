#include "model/testing/test_assistant.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/assistant_gguf.h"
#include "util/error.h"
#include "util/float16.h"
#include "util/splitmix.h"

namespace ringlm::model::testing {
namespace {

struct Preset {
  int backbone, hidden, layers, heads, kv_heads, head_dim, global_head_dim, intermediate, vocab, window;
  bool ordered;
  int centroids, top_k;
};

Preset preset_named(const std::string& name) {
  // Layer kinds as the published assistants: three sliding layers, then one full layer.
  if (name == "tiny") return {64, 32, 4, 4, 1, 32, 64, 64, 768, 16, true, 8, 2};
  if (name == "tiny-dense") return {64, 32, 4, 4, 1, 32, 64, 64, 768, 16, false, 8, 2};
  // The smallest shape the kernels take (rows of 32): the fuzz seed (fuzz/corpus/assistant_gguf).
  if (name == "micro") return {32, 32, 4, 1, 1, 32, 64, 32, 64, 8, true, 4, 2};
  // The demo model's (tiny structure, the real 262,144-token vocabulary): E2B's centroid head.
  if (name == "demo") return {64, 32, 4, 4, 1, 32, 64, 64, 262144, 16, true, 2048, 32};
  if (name == "e2b") return {1536, 256, 4, 4, 1, 256, 512, 2048, 262144, 512, true, 2048, 32};
  fail("make-test-model --assistant: unknown preset '", name, "' (tiny, tiny-dense, micro, demo, e2b)");
}

// One reproducible stream per (seed, tensor name); the salt keeps the assistant's apart.
struct Rng : NamedStream {
  Rng(std::uint64_t seed, const std::string& name) : NamedStream(seed, 0x632be59bd9b4e019ull, name) {}
};

struct Planned {
  io::TensorSpec spec;
  float lo, hi;  // uniform range (unused for the token ordering)
};

nlohmann::ordered_json config_json(const Preset& p) {
  nlohmann::ordered_json t;
  t["model_type"] = "gemma4_text";
  t["vocab_size"] = p.vocab;
  t["hidden_size"] = p.hidden;
  t["intermediate_size"] = p.intermediate;
  t["num_hidden_layers"] = p.layers;
  t["num_attention_heads"] = p.heads;
  t["num_key_value_heads"] = p.kv_heads;
  t["num_kv_shared_layers"] = p.layers;
  t["head_dim"] = p.head_dim;
  t["global_head_dim"] = p.global_head_dim;
  t["hidden_activation"] = "gelu_pytorch_tanh";
  t["hidden_size_per_layer_input"] = 0;
  t["vocab_size_per_layer_input"] = 0;
  t["final_logit_softcapping"] = nullptr;
  t["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention", "full_attention"};
  t["rope_parameters"] = {
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
      {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1000000.0}}}};
  t["sliding_window"] = p.window;
  t["rms_norm_eps"] = 1e-6;
  t["max_position_embeddings"] = 131072;
  t["use_double_wide_mlp"] = false;
  t["enable_moe_block"] = false;
  t["attention_k_eq_v"] = false;
  t["tie_word_embeddings"] = true;
  nlohmann::ordered_json c;
  c["architectures"] = {"Gemma4AssistantForCausalLM"};
  c["model_type"] = "gemma4_assistant";
  c["backbone_hidden_size"] = p.backbone;
  c["use_ordered_embeddings"] = p.ordered;
  c["num_centroids"] = p.centroids;
  c["centroid_intermediate_top_k"] = p.top_k;
  c["tie_word_embeddings"] = true;
  c["text_config"] = t;
  return c;
}

std::vector<Planned> plan(const Preset& p, io::DType dt) {
  auto sym = [](double std_dev) { const float a = static_cast<float>(std_dev * std::sqrt(3.0)); return std::pair{-a, a}; };
  std::vector<Planned> out;
  auto mat = [&](const std::string& n, std::int64_t r, std::int64_t c, double scale = 1.0) {
    auto [lo, hi] = sym(scale / std::sqrt(double(c)));
    out.push_back({{n, dt, {r, c}}, lo, hi});
  };
  auto vec = [&](const std::string& n, std::int64_t len, float lo, float hi) { out.push_back({{n, dt, {len}}, lo, hi}); };
  // Logit standard deviation ~3, as the test decoder's head.
  mat("model.embed_tokens.weight", p.vocab, p.hidden, 3.0);
  vec("model.norm.weight", p.hidden, 0.5f, 1.5f);
  // pre_projection reads the scaled embedding (entries ~3/sqrt(B) * sqrt(B)) and a normed h.
  mat("pre_projection.weight", p.hidden, 2 * p.backbone, 0.5);
  mat("post_projection.weight", p.backbone, p.hidden);
  if (p.ordered) {
    mat("masked_embedding.centroids.weight", p.centroids, p.hidden);
    out.push_back({{"masked_embedding.token_ordering", io::DType::I64, {p.vocab}}, 0, 0});
  }
  for (int l = 0; l < p.layers; ++l) {
    const std::string s = "model.layers." + std::to_string(l) + ".";
    const int d = l == p.layers - 1 ? p.global_head_dim : p.head_dim;
    const float qk = static_cast<float>(std::pow(double(d), -0.25));
    vec(s + "input_layernorm.weight", p.hidden, 0.5f, 1.5f);
    mat(s + "self_attn.q_proj.weight", std::int64_t(p.heads) * d, p.hidden);
    vec(s + "self_attn.q_norm.weight", d, 1.0f * qk, 2.0f * qk);
    mat(s + "self_attn.o_proj.weight", p.hidden, std::int64_t(p.heads) * d);
    vec(s + "post_attention_layernorm.weight", p.hidden, 0.5f, 1.5f);
    vec(s + "pre_feedforward_layernorm.weight", p.hidden, 0.5f, 1.5f);
    mat(s + "mlp.gate_proj.weight", p.intermediate, p.hidden);
    mat(s + "mlp.up_proj.weight", p.intermediate, p.hidden);
    mat(s + "mlp.down_proj.weight", p.hidden, p.intermediate);
    vec(s + "post_feedforward_layernorm.weight", p.hidden, 0.5f, 1.5f);
    vec(s + "layer_scalar", 1, 0.6f, 1.2f);
  }
  return out;
}

}  // namespace

void write_test_assistant(const std::filesystem::path& out, const TestAssistantOptions& o) {
  const Preset p = preset_named(o.preset);
  if (o.dtype != io::DType::BF16 && o.dtype != io::DType::F16 && o.dtype != io::DType::F32)
    fail("make-test-model --assistant: dtype must be bf16, f16 or f32");
  std::filesystem::create_directories(out);
  {
    std::ofstream f(out / "config.json");
    f << config_json(p).dump(2) << "\n";
    if (!f) fail_io((out / "config.json").string(), ": cannot write");
  }
  const std::vector<Planned> planned = plan(p, o.dtype);
  std::vector<io::TensorSpec> specs;
  for (const Planned& t : planned) specs.push_back(t.spec);
  io::write_safetensors(out / "model.safetensors", specs, [&](const io::TensorSpec& spec, const auto& write) {
    Rng rng(o.seed, spec.name);
    if (spec.dtype == io::DType::I64) {  // a seeded permutation of the vocabulary
      std::vector<std::int64_t> perm(static_cast<std::size_t>(spec.shape[0]));
      std::iota(perm.begin(), perm.end(), 0);
      for (std::size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.next() % i]);
      write(perm.data(), perm.size() * sizeof(std::int64_t));
      return;
    }
    const Planned* t = nullptr;
    for (const Planned& q : planned)
      if (q.spec.name == spec.name) t = &q;
    std::int64_t n = 1;
    for (auto dim : spec.shape) n *= dim;
    std::vector<std::uint8_t> buf;
    const std::size_t es = spec.dtype == io::DType::F32 ? 4 : 2;
    buf.resize(static_cast<std::size_t>(std::min<std::int64_t>(n, 1 << 20)) * es);
    for (std::int64_t done = 0; done < n;) {
      const std::int64_t m = std::min<std::int64_t>(n - done, 1 << 20);
      for (std::int64_t i = 0; i < m; ++i) {
        const float v = rng.uniform(t->lo, t->hi);
        if (spec.dtype == io::DType::F32) std::memcpy(buf.data() + 4 * i, &v, 4);
        else {
          const std::uint16_t h = spec.dtype == io::DType::BF16 ? f32_to_bf16(v) : f32_to_fp16(v);
          std::memcpy(buf.data() + 2 * i, &h, 2);
        }
      }
      write(buf.data(), static_cast<std::size_t>(m) * es);
      done += m;
    }
  });
}

void write_test_assistant_gguf(const std::filesystem::path& out, const TestAssistantOptions& options,
                               io::DType matrix_type) {
  if (matrix_type != io::DType::F32 && matrix_type != io::DType::F16 && matrix_type != io::DType::BF16 &&
      matrix_type != io::DType::Q8_0 && matrix_type != io::DType::Q4_0)
    fail("make-test-model --assistant: a GGUF assistant's dtype must be f32, f16, bf16, q8_0 or q4_0");
  TestAssistantOptions o = options;
  const bool is_float = matrix_type == io::DType::F16 || matrix_type == io::DType::BF16;
  o.dtype = is_float ? matrix_type : io::DType::F32;  // quantized from float32 weights
  std::filesystem::path tmp = out;
  tmp += ".safetensors.tmp";  // not OUT.tmp: the GGUF writer's own temporary file
  std::filesystem::remove_all(tmp);
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{tmp};
  write_test_assistant(tmp, o);
  std::ifstream in(tmp / "config.json");
  const nlohmann::json config = nlohmann::json::parse(in);
  const auto source = io::open_safetensors_dir(tmp);
  export_assistant_gguf(*source, config, out, matrix_type);
}

}  // namespace ringlm::model::testing
