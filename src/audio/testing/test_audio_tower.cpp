#include "audio/testing/test_audio_tower.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "audio/audio_config.h"
#include "audio/audio_weights.h"
#include "util/error.h"
#include "util/float16.h"
#include "util/splitmix.h"

namespace ringlm::audio::testing {
namespace {

using ojson = nlohmann::ordered_json;

// One reproducible stream per (seed, tensor name); the salt keeps this tower's apart.
struct Rng : NamedStream {
  Rng(std::uint64_t seed, const std::string& name) : NamedStream(seed, 0x5eed0a0d10ull, name) {}
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
Range init_for(const std::string& name, const std::vector<std::int64_t>& shape) {
  const auto sym = [](double std_dev) {
    const float a = static_cast<float>(std_dev * std::sqrt(3.0));
    return Range{-a, a};
  };
  if (ends_with(name, "norm.weight")) return {0.5f, 1.5f};
  if (ends_with(name, "input_min")) return {-2.2f, -1.8f};
  if (ends_with(name, "input_max")) return {1.8f, 2.2f};
  if (ends_with(name, "output_min")) return {-2.6f, -2.2f};
  if (ends_with(name, "output_max")) return {2.2f, 2.6f};
  if (ends_with(name, "per_dim_scale")) return sym(0.5);
  if (ends_with(name, "output_proj.bias")) return sym(0.3);
  std::int64_t fan_in = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) fan_in *= shape[i];
  return sym(1.0 / std::sqrt(double(fan_in)));  // linear [out, in] and convolutions [out, in, k...]
}

ojson audio_config_json(const std::string& preset) {
  const bool tiny = preset == "tiny";
  ojson a;
  a["model_type"] = "gemma4_audio";
  a["hidden_size"] = tiny ? 32 : 1024;
  a["num_hidden_layers"] = tiny ? 2 : 12;
  a["num_attention_heads"] = tiny ? 4 : 8;
  a["hidden_act"] = "silu";
  a["subsampling_conv_channels"] = tiny ? ojson::array({128, 8}) : ojson::array({128, 32});
  a["conv_kernel_size"] = 5;
  a["residual_weight"] = 0.5;
  a["attention_chunk_size"] = 12;
  a["attention_context_left"] = 13;
  a["attention_context_right"] = 0;
  a["attention_logit_cap"] = 50.0;
  a["attention_invalid_logits_value"] = -1.0e9;
  a["use_clipped_linears"] = true;
  a["rms_norm_eps"] = 1e-6;
  a["gradient_clipping"] = 1e10;
  a["output_proj_dims"] = tiny ? 24 : 1536;
  a["initializer_range"] = 0.02;
  return a;
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

AudioConfig config_of(const std::string& preset, int text_hidden) {
  if (preset != "tiny" && preset != "full") fail("make-test-model: unknown audio tower preset '", preset, "'");
  ojson doc;
  doc["audio_config"] = audio_config_json(preset);
  doc["text_config"] = {{"hidden_size", text_hidden}};
  return *parse_audio_config(doc.dump(), "make-test-model");
}

}  // namespace

std::vector<io::TensorSpec> test_audio_tensors(const std::string& preset, int text_hidden, io::DType dtype) {
  std::vector<io::TensorSpec> specs;
  for (const auto& t : audio_tensor_shapes(config_of(preset, text_hidden)))
    specs.push_back({"model." + t.name, t.shape.empty() ? io::DType::F32 : dtype, t.shape});
  return specs;
}

void fill_test_audio_tensor(const std::string& preset, int text_hidden, std::uint64_t seed, const io::TensorSpec& spec,
                            const std::function<void(const void*, std::size_t)>& write) {
  Rng rng(seed, spec.name);
  const Range r = init_for(spec.name, spec.shape.empty() ? std::vector<std::int64_t>{1} : spec.shape);
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
  (void)text_hidden;
}

void write_test_audio_config(const std::filesystem::path& dir, const std::string& preset) {
  const auto config_path = dir / "config.json";
  ojson config = ojson::parse(read_text(config_path));
  if (!config.contains("text_config")) fail(config_path.string(), ": an audio tower needs the multimodal layout (text_config)");
  config["audio_config"] = audio_config_json(preset);
  config["audio_token_id"] = 258881;
  config["boa_token_id"] = 256000;
  config["eoa_token_index"] = 258883;
  write_text(config_path, config.dump(2) + "\n");

  // The released extractor's settings, as transformers serializes them.
  const auto proc_path = dir / "processor_config.json";
  ojson proc = std::filesystem::exists(proc_path) ? ojson::parse(read_text(proc_path)) : ojson::object();
  proc["feature_extractor"] = {{"feature_extractor_type", "Gemma4AudioFeatureExtractor"},
                               {"dither", 0.0},
                               {"feature_size", 128},
                               {"fft_length", 512},
                               {"fft_overdrive", false},
                               {"frame_length", 320},
                               {"hop_length", 160},
                               {"input_scale_factor", 1.0},
                               {"max_frequency", 8000.0},
                               {"mel_floor", 0.001},
                               {"min_frequency", 0.0},
                               {"padding_side", "right"},
                               {"padding_value", 0.0},
                               {"per_bin_mean", nullptr},
                               {"per_bin_stddev", nullptr},
                               {"preemphasis", 0.0},
                               {"preemphasis_htk_flavor", true},
                               {"return_attention_mask", true},
                               {"sampling_rate", 16000}};
  proc["audio_seq_length"] = 750;
  proc["audio_ms_per_token"] = 40;
  proc["processor_class"] = "Gemma4Processor";
  write_text(proc_path, proc.dump(2) + "\n");
}

}  // namespace ringlm::audio::testing
