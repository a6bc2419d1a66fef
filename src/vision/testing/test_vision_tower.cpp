#include "vision/testing/test_vision_tower.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/safetensors_writer.h"
#include "util/error.h"
#include "util/float16.h"
#include "util/splitmix.h"
#include "vision/vision_config.h"
#include "vision/vision_weights.h"

namespace ringlm::vision::testing {
namespace {

using ojson = nlohmann::ordered_json;

// One reproducible stream per (seed, tensor name); the salt keeps this tower's apart.
struct Rng : NamedStream {
  Rng(std::uint64_t seed, const std::string& name) : NamedStream(seed, 0x7f4a7c15ull, name) {}
};

struct Range {
  float lo, hi;
};

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Ranges that keep activations healthy; the clip bounds are tight enough that some values
// really are clamped, so the clamps are exercised.
Range init_for(const std::string& name, const std::vector<std::int64_t>& shape, const VisionConfig& c) {
  const auto sym = [](double std_dev) {
    const float a = static_cast<float>(std_dev * std::sqrt(3.0));
    return Range{-a, a};
  };
  if (ends_with(name, "q_norm.weight") || ends_with(name, "k_norm.weight")) {
    const float s = static_cast<float>(std::pow(double(c.head_dim), -0.25));
    return {1.0f * s, 1.6f * s};
  }
  if (ends_with(name, "layernorm.weight")) return {0.5f, 1.5f};
  if (ends_with(name, "input_min")) return {-2.2f, -1.8f};
  if (ends_with(name, "input_max")) return {1.8f, 2.2f};
  if (ends_with(name, "output_min")) return {-2.6f, -2.2f};
  if (ends_with(name, "output_max")) return {2.2f, 2.6f};
  if (ends_with(name, "position_embedding_table")) return sym(0.5);
  if (ends_with(name, "std_bias")) return sym(0.3);
  if (ends_with(name, "std_scale")) return {0.5f, 1.5f};
  return sym(1.0 / std::sqrt(double(shape.back())));  // a linear layer: [out, in]
}

ojson vision_config_json(const std::string& preset) {
  ojson v;
  v["model_type"] = "gemma4_vision";
  const bool tiny = preset == "tiny";
  v["hidden_size"] = tiny ? 32 : 768;
  v["intermediate_size"] = tiny ? 64 : 3072;
  v["num_hidden_layers"] = tiny ? 2 : 16;
  v["num_attention_heads"] = tiny ? 4 : 12;
  v["num_key_value_heads"] = tiny ? 2 : 12;
  v["head_dim"] = tiny ? 16 : 64;
  v["hidden_activation"] = "gelu_pytorch_tanh";
  v["rms_norm_eps"] = 1e-6;
  v["max_position_embeddings"] = 131072;
  v["attention_bias"] = false;
  v["attention_dropout"] = 0.0;
  v["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 100.0}};
  v["pooling_kernel_size"] = 3;
  v["patch_size"] = 16;
  v["position_embedding_size"] = tiny ? 1024 : 10240;
  v["use_clipped_linears"] = true;
  v["standardize"] = tiny;
  return v;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(p.string(), ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (!out) fail(p.string(), ": cannot create");
  out << text;
  if (!out) fail(p.string(), ": write failed");
}

VisionConfig config_of(const std::string& preset, int text_hidden) {
  if (preset != "tiny" && preset != "full") fail("make-test-model: unknown vision tower preset '", preset, "'");
  ojson doc;
  doc["vision_config"] = vision_config_json(preset);
  doc["text_config"] = {{"hidden_size", text_hidden}};
  return *parse_vision_config(doc.dump(), "make-test-model");
}

}  // namespace

std::vector<io::TensorSpec> test_vision_tensors(const std::string& preset, int text_hidden, io::DType dtype) {
  std::vector<io::TensorSpec> specs;
  for (const auto& t : vision_tensor_shapes(config_of(preset, text_hidden)))
    specs.push_back({"model." + t.name, t.shape.empty() ? io::DType::F32 : dtype, t.shape});
  return specs;
}

void fill_test_vision_tensor(const std::string& preset, int text_hidden, std::uint64_t seed,
                             const io::TensorSpec& spec, const std::function<void(const void*, std::size_t)>& write) {
  const VisionConfig vc = config_of(preset, text_hidden);
  Rng rng(seed, spec.name);
  const Range r = init_for(spec.name, spec.shape.empty() ? std::vector<std::int64_t>{1} : spec.shape, vc);
  std::int64_t n = 1;
  for (auto d : spec.shape) n *= d;
  const std::size_t esize = spec.dtype == io::DType::F32 ? 4 : 2;
  constexpr std::int64_t kBlock = 1 << 16;
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(kBlock) * 4);
  for (std::int64_t done = 0; done < n; done += kBlock) {
    const std::int64_t m = std::min(kBlock, n - done);
    for (std::int64_t i = 0; i < m; ++i) {
      const float v = rng.uniform(r.lo, r.hi);
      if (spec.dtype == io::DType::F32) {
        std::memcpy(buf.data() + 4 * i, &v, 4);
      } else {
        const std::uint16_t hv = spec.dtype == io::DType::BF16 ? f32_to_bf16(v) : f32_to_fp16(v);
        std::memcpy(buf.data() + 2 * i, &hv, 2);
      }
    }
    write(buf.data(), static_cast<std::size_t>(m) * esize);
  }
}

void write_test_vision_config(const std::filesystem::path& dir, const std::string& preset) {
  const auto config_path = dir / "config.json";
  ojson config = ojson::parse(read_text(config_path));
  if (!config.contains("text_config")) fail(config_path.string(), ": a vision tower needs the multimodal layout (text_config)");
  config["vision_config"] = vision_config_json(preset);
  config["boi_token_id"] = 255999;
  config["eoi_token_id"] = 258882;
  config["image_token_id"] = 258880;
  config["video_token_id"] = 258884;
  write_text(config_path, config.dump(2) + "\n");

  ojson proc;
  proc["image_processor"] = {{"image_processor_type", "Gemma4ImageProcessor"},
                             {"do_convert_rgb", true},
                             {"do_normalize", false},
                             {"do_rescale", true},
                             {"do_resize", true},
                             {"image_mean", {0.0, 0.0, 0.0}},
                             {"image_std", {1.0, 1.0, 1.0}},
                             {"max_soft_tokens", 280},
                             {"patch_size", 16},
                             {"pooling_kernel_size", 3},
                             {"resample", 3},
                             {"rescale_factor", 1.0 / 255.0}};
  proc["image_seq_length"] = 280;
  proc["processor_class"] = "Gemma4Processor";
  write_text(dir / "processor_config.json", proc.dump(2) + "\n");
}

}  // namespace ringlm::vision::testing
