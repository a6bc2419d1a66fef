#include "model/testing/test_checkpoint.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/safetensors_writer.h"
#include "util/progress.h"
#include "model/config.h"
#include "model/tensor_manifest.h"
#include "util/error.h"
#include "util/float16.h"
#include "util/splitmix.h"

namespace ringlm::model::testing {
namespace {

using ojson = nlohmann::ordered_json;

struct Preset {
  int vocab, hidden, intermediate, layers, heads, kv_heads, head_dim, global_head_dim, kv_shared;
  bool double_wide;
  int ple_dim, window, max_positions;
  std::vector<std::string> layer_types;
  bool real_tokenizer;
};

std::vector<std::string> repeat_pattern(int sliding, int times) {
  std::vector<std::string> out;
  for (int r = 0; r < times; ++r) {
    for (int i = 0; i < sliding; ++i) out.push_back("sliding_attention");
    out.push_back("full_attention");
  }
  return out;
}

Preset preset_named(const std::string& name) {
  if (name == "tiny" || name == "tiny-gqa") {
    // Owning layers 0-4 (sliding 0, 1, 3; full 2, 4); shared layers 5-9 read 3 (sliding) or 4 (full).
    Preset p{768, 64, 128, 10, 4, name == "tiny" ? 1 : 2, 32, 64, 5, true, 16, 16, 4096,
             {"sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention",
              "sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "full_attention"},
             false};
    return p;
  }
  if (name == "demo") {
    // The built-in demo model: tiny's structure with the real 262,144-token Gemma 4 vocabulary,
    // so prompts, chat template and guided decoding behave as with a real checkpoint.
    Preset p = preset_named("tiny");
    p.vocab = 262144;
    p.real_tokenizer = true;
    return p;
  }
  // Values of transformers' convert_gemma4_weights.py _VARIANTS (plus Gemma4TextConfig defaults).
  if (name == "e2b") return {262144, 1536, 6144, 35, 8, 1, 256, 512, 20, true, 256, 512, 131072, repeat_pattern(4, 7), true};
  if (name == "e4b") return {262144, 2560, 10240, 42, 8, 2, 256, 512, 18, false, 256, 512, 131072, repeat_pattern(5, 7), true};
  fail("make-test-model: unknown preset '", name, "' (tiny, tiny-gqa, demo, e2b, e4b)");
}

// xoshiro256** seeded through splitmix64: fast, and reproducible per (seed, tensor name).
class Rng {
 public:
  Rng(std::uint64_t seed, const std::string& name) {
    std::uint64_t h = seed ^ 0x9e3779b97f4a7c15ull;
    for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
    for (auto& s : s_) s = splitmix64_next(h);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0]; s_[3] ^= s_[1]; s_[1] ^= s_[2]; s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

struct Init {
  float lo, hi;
};
Init symmetric(double std_dev) {
  const float a = static_cast<float>(std_dev * std::sqrt(3.0));
  return {-a, a};
}

struct PlannedTensor {
  io::TensorSpec spec;
  Init init;
  bool lattice = false;  // TestCheckpointOptions::qat: values on an int4 lattice (fill_lattice)
};

ojson text_config_json(const Preset& p) {
  ojson t;
  t["model_type"] = "gemma4_text";
  t["vocab_size"] = p.vocab;
  t["hidden_size"] = p.hidden;
  t["intermediate_size"] = p.intermediate;
  t["num_hidden_layers"] = p.layers;
  t["num_attention_heads"] = p.heads;
  t["num_key_value_heads"] = p.kv_heads;
  t["num_global_key_value_heads"] = nullptr;
  t["head_dim"] = p.head_dim;
  t["global_head_dim"] = p.global_head_dim;
  t["hidden_activation"] = "gelu_pytorch_tanh";
  t["max_position_embeddings"] = p.max_positions;
  t["rms_norm_eps"] = 1e-6;
  t["pad_token_id"] = 0;
  t["eos_token_id"] = {1, 106};
  t["bos_token_id"] = 2;
  t["tie_word_embeddings"] = true;
  t["rope_parameters"] = {
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
      {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1000000.0}}}};
  t["attention_bias"] = false;
  t["attention_dropout"] = 0.0;
  t["sliding_window"] = p.window;
  t["layer_types"] = p.layer_types;
  t["final_logit_softcapping"] = 30.0;
  t["use_bidirectional_attention"] = nullptr;
  t["vocab_size_per_layer_input"] = p.vocab;
  t["hidden_size_per_layer_input"] = p.ple_dim;
  t["attention_k_eq_v"] = false;
  t["num_kv_shared_layers"] = p.kv_shared;
  t["enable_moe_block"] = false;
  t["use_double_wide_mlp"] = p.double_wide;
  return t;
}

// The scale each tensor is drawn at: matrices ~1/sqrt(input width), norm weights near 1.
Init init_of(const ManifestTensor& t, const ModelConfig& c) {
  const Init norm{0.5f, 1.5f};
  const TensorMember& m = t.entry->member;
  switch (t.entry->kind) {
    // Logit standard deviation ~3: healthy argmax margins without saturating the soft cap.
    case TensorKind::embedding: return symmetric(3.0 / std::sqrt(double(t.shape[1])));
    case TensorKind::ple_table: return symmetric(1.0 / std::sqrt(double(c.ple_dim)));
    case TensorKind::linear:
      // The gate reads the raw residual stream (not normalised), hence the smaller scale.
      return symmetric((m == TensorMember(&LayerWeights::ple_gate) ? 0.3 : 1.0) / std::sqrt(double(t.shape[1])));
    case TensorKind::norm: {
      // q and k are RMS-normalised, so the norm weights set the attention temperature:
      // scores end up with a standard deviation of about 2.
      const float qk = static_cast<float>(std::pow(double(t.shape[0]), -0.25));
      if (m == TensorMember(&LayerWeights::q_norm)) return {1.0f * qk, 2.0f * qk};
      if (m == TensorMember(&LayerWeights::k_norm)) return {0.7f * qk, 1.4f * qk};
      return norm;
    }
    case TensorKind::scalar: return {0.6f, 1.2f};
  }
  return norm;
}

// The text decoder's tensors in the manifest's order (model/tensor_manifest.h); the tied
// head is not stored.
std::vector<PlannedTensor> plan_tensors(const ModelConfig& c, const TestCheckpointOptions& o) {
  std::vector<PlannedTensor> out;
  for (const ManifestTensor& t : manifest_tensors(c)) {
    const bool shared_kv = o.with_shared_kv && t.entry->presence == Presence::own_kv;
    if (!t.present && !shared_kv) continue;
    const bool lattice = o.qat && t.shape.size() == 2 && t.shape[1] % 32 == 0 &&
                         (t.entry->kind == TensorKind::linear || t.entry->kind == TensorKind::embedding);
    out.push_back({io::TensorSpec{o.prefix + t.name, lattice ? io::DType::F32 : o.dtype, t.shape}, init_of(t, c), lattice});
  }
  return out;
}

// One row of a lattice tensor: blocks of 32 values c_i * s with a bf16 scale s near the
// tensor's spread and integer codes c_i, of four kinds in turn (by a random draw):
//   ggml-like   codes in [-8, 7], one of them -8 (ggml's own rule recovers these);
//   clipped +7  codes in [-7, 7] with +7 present and no -7 (what symmetric clipping gives
//               when the extreme is positive: ggml's rule moves these off the lattice);
//   symmetric   codes in [-7, 7] with -7 present;
//   tiny        codes in [-8, 7], s below fp16's smallest normal (2^-14): fp16 cannot hold s.
void fill_lattice_row(Rng& rng, const Init& init, std::int64_t cols, float* row) {
  const float spread = std::max(std::fabs(init.lo), std::fabs(init.hi));
  for (std::int64_t b = 0; b < cols / 32; ++b) {
    const int kind = static_cast<int>(rng.next() % 8);
    float s = spread / 7.0f * rng.uniform(0.5f, 1.5f);
    if (kind == 7) s = std::ldexp(rng.uniform(1.0f, 2.0f), -16 - static_cast<int>(rng.next() % 8));  // 2^-23..2^-15
    s = bf16_to_f32(f32_to_bf16(s));
    const int lo = kind <= 2 || kind == 7 ? -8 : -7;
    int c[32];
    for (int& x : c) x = lo + static_cast<int>(rng.next() % static_cast<std::uint64_t>(7 - lo + 1));
    const int at = static_cast<int>(rng.next() % 32);
    if (kind <= 2 || kind == 7) c[at] = -8;
    else if (kind <= 5) {
      for (int& x : c) x = x == -7 ? -6 : x;
      c[at] = 7;
    } else {
      c[at] = -7;
    }
    for (int i = 0; i < 32; ++i) row[b * 32 + i] = static_cast<float>(c[i]) * s;  // exact in float32
  }
}

void fill_tensor(const PlannedTensor& t, std::uint64_t seed,
                 const std::function<void(const void*, std::size_t)>& write) {
  Rng rng(seed, t.spec.name);
  if (t.lattice) {
    std::vector<float> row(static_cast<std::size_t>(t.spec.shape[1]));
    for (std::int64_t r = 0; r < t.spec.shape[0]; ++r) {
      fill_lattice_row(rng, t.init, t.spec.shape[1], row.data());
      write(row.data(), row.size() * 4);
    }
    return;
  }
  std::int64_t n = 1;
  for (auto d : t.spec.shape) n *= d;
  constexpr std::int64_t kBlock = 1 << 16;
  std::vector<std::uint8_t> buf(kBlock * 4);
  for (std::int64_t done = 0; done < n; done += kBlock) {
    const std::int64_t m = std::min(kBlock, n - done);
    for (std::int64_t i = 0; i < m; ++i) {
      const float v = rng.uniform(t.init.lo, t.init.hi);
      if (t.spec.dtype == io::DType::F32) {
        std::memcpy(buf.data() + 4 * i, &v, 4);
      } else {
        const std::uint16_t h = t.spec.dtype == io::DType::BF16 ? f32_to_bf16(v) : f32_to_fp16(v);
        std::memcpy(buf.data() + 2 * i, &h, 2);
      }
    }
    write(buf.data(), static_cast<std::size_t>(m) * (t.spec.dtype == io::DType::F32 ? 4 : 2));
  }
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path.string(), ": cannot create");
  out << text;
  if (!out) fail(path.string(), ": write failed");
}

void write_json(const std::filesystem::path& path, const ojson& j) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path.string(), ": cannot create");
  out << j.dump(2) << "\n";
  if (!out) fail(path.string(), ": write failed");
}

}  // namespace

std::string test_checkpoint_config_json(const TestCheckpointOptions& o) {
  const Preset p = preset_named(o.preset);
  ojson text = text_config_json(p);
  ojson config;
  if (o.flat_config) {
    config["architectures"] = {"Gemma4ForCausalLM"};
    for (auto it = text.begin(); it != text.end(); ++it) config[it.key()] = it.value();
  } else {
    config["architectures"] = {"Gemma4ForConditionalGeneration"};
    config["model_type"] = "gemma4";
    config["text_config"] = text;
    config["vision_config"] = nullptr;
    config["audio_config"] = nullptr;
    config["eos_token_id"] = {1, 106};
    config["tie_word_embeddings"] = true;
  }
  config["torch_dtype"] = o.dtype == io::DType::BF16 ? "bfloat16" : o.dtype == io::DType::F16 ? "float16" : "float32";
  config["ringlm_test_model"] = {{"preset", o.preset}, {"seed", o.seed}};
  if (o.qat) config["ringlm_test_model"]["qat"] = "int4 lattice, blocks of 32, bf16 scales, stored as float32";
  return config.dump(2);
}

void write_test_checkpoint(const std::filesystem::path& dir, const TestCheckpointOptions& o) {
  const Preset p = preset_named(o.preset);
  if (o.shards < 1 || o.shards > 99) fail("make-test-model: --shards must be between 1 and 99");
  if (o.dtype != io::DType::BF16 && o.dtype != io::DType::F16 && o.dtype != io::DType::F32)
    fail("make-test-model: dtype must be bf16, f16 or f32");
  std::filesystem::create_directories(dir);

  const ojson config = ojson::parse(test_checkpoint_config_json(o));
  write_json(dir / "config.json", config);
  write_json(dir / "generation_config.json",
             {{"bos_token_id", 2}, {"eos_token_id", {1, 106, 50}}, {"pad_token_id", 0}});

  const ModelConfig cfg = parse_model_config(config.dump(), (dir / "config.json").string());
  std::vector<PlannedTensor> planned = plan_tensors(cfg, o);
  for (const auto& spec : o.extra_tensors) planned.push_back({spec, Init{0.0f, 0.0f}});
  std::uint64_t total = 0;
  for (const auto& t : planned) total += t.spec.nbytes();

  // Shards split the tensor list into runs of roughly equal byte size.
  std::vector<std::vector<const PlannedTensor*>> shards(o.shards);
  std::uint64_t acc = 0;
  std::size_t prev = 0;
  for (std::size_t i = 0; i < planned.size(); ++i) {
    std::size_t s = std::min<std::size_t>(o.shards - 1, acc * o.shards / std::max<std::uint64_t>(total, 1));
    s = std::max(s, prev);
    // Leave at least one tensor for every later shard, and skip no shard.
    if (planned.size() - i <= static_cast<std::size_t>(o.shards) - 1 - prev) s = prev + 1;
    s = std::min(s, std::min<std::size_t>(prev + 1, o.shards - 1));
    if (i == 0) s = 0;
    shards[s].push_back(&planned[i]);
    prev = s;
    acc += planned[i].spec.nbytes();
  }
  for (const auto& shard : shards)
    if (shard.empty()) fail("make-test-model: too many shards for ", planned.size(), " tensors");
  ojson weight_map = ojson::object();
  std::set<std::string> extra_names;
  for (const auto& spec : o.extra_tensors) extra_names.insert(spec.name);
  for (int s = 0; s < o.shards; ++s) {
    char name[64];
    if (o.shards == 1) std::snprintf(name, sizeof name, "model.safetensors");
    else std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, o.shards);
    std::vector<io::TensorSpec> specs;
    std::map<std::string, const PlannedTensor*> by_name;
    for (const PlannedTensor* t : shards[s]) {
      specs.push_back(t->spec);
      by_name[t->spec.name] = t;
      weight_map[t->spec.name] = name;
    }
    std::uint64_t shard_bytes = 0;
    for (const auto& spec : specs) shard_bytes += spec.nbytes();
    ProgressStage progress(std::string("make-test-model: ") + name, shard_bytes, "bytes");
    io::write_safetensors(dir / name, specs, [&](const io::TensorSpec& spec, const auto& write) {
      auto counted = [&](const void* data, std::size_t n) {
        write(data, n);
        progress.add(n);
      };
      if (extra_names.count(spec.name)) o.extra_filler(spec, counted);
      else fill_tensor(*by_name.at(spec.name), o.seed, counted);
    });
  }
  if (o.shards > 1)
    write_json(dir / "model.safetensors.index.json", {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}});

  // Tokenizer: the real Gemma 4 files for full-size presets; a small BPE for tiny.
  if (p.real_tokenizer) {
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"}) {
      const auto src = o.tokenizer_dir / f;
      if (!std::filesystem::exists(src)) {
        if (std::string(f) == "chat_template.jinja") continue;
        fail(src.string(), ": missing (pass --tokenizer DIR with the Gemma 4 tokenizer files)");
      }
      write_text(dir / f, read_text(src));
    }
  } else {
    std::string chat_template;
    const auto tmpl = o.tokenizer_dir / "chat_template.jinja";
    if (!o.tokenizer_dir.empty() && std::filesystem::exists(tmpl)) {
      chat_template = read_text(tmpl);
      write_text(dir / "chat_template.jinja", chat_template);
    }
    write_tiny_tokenizer(dir, p.vocab, chat_template);
  }
}

}  // namespace ringlm::model::testing
