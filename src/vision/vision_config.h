// Gemma 4 vision tower configuration: the "vision_config" object of config.json (fields of
// transformers' Gemma4VisionConfig), the image token ids of the top-level config, and the
// image processor's settings (processor_config.json's "image_processor", or a flat
// preprocessor_config.json). A checkpoint without a vision_config (text-only) has none.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ringlm::io {
class GgufFile;
}

namespace ringlm::vision {

struct VisionConfig {
  std::string source;  // config.json path, for error messages

  int hidden_size = 768;
  int intermediate_size = 3072;
  int num_layers = 16;
  int num_heads = 12;
  int num_kv_heads = 12;
  int head_dim = 64;
  double rms_norm_eps = 1e-6;
  double rope_theta = 100.0;
  int patch_size = 16;
  int pooling_kernel_size = 3;
  int position_embedding_size = 10240;
  bool use_clipped_linears = false;
  bool standardize = false;
  int text_hidden_size = 0;  // the embedder's output width (text_config.hidden_size)

  // Prompt tokens (Gemma4Config defaults).
  int image_token_id = 258880;
  int boi_token_id = 255999;
  int eoi_token_id = 258882;

  // Image processor.
  int default_soft_tokens = 280;  // max_soft_tokens
  bool do_resize = true;
  double rescale_factor = 1.0 / 255.0;
};

// The soft-token budgets the Hugging Face image processor accepts.
inline constexpr int kSoftTokenBudgets[] = {70, 140, 280, 560, 1120};
bool is_soft_token_budget(int n);

// Parses config.json text (and, when not empty, the processor config text) into a config,
// or nullopt when config.json has no vision_config. `source` names config.json in errors.
std::optional<VisionConfig> parse_vision_config(const std::string& config_json, const std::string& source,
                                                const std::string& processor_json = "",
                                                const std::string& processor_source = "");
// Reads DIR/config.json and DIR/processor_config.json or DIR/preprocessor_config.json.
std::optional<VisionConfig> load_vision_config(const std::filesystem::path& dir);

// The vision tower of a llama.cpp mmproj file (io/mmproj.h), or nullopt when it has none:
// sizes from clip.vision.* metadata, head_dim / position table / clipping / standardize
// from the tensors themselves, and what llama.cpp hard-codes for gemma4v (rope theta 100,
// pooling 3, budget 280, the Gemma 4 image token ids) unless ringlm's own ringlm.vision.*
// keys (written by `ringlm convert --mmproj-out`) say otherwise. Throws ringlm::Error
// naming the file and key.
std::optional<VisionConfig> vision_config_from_mmproj(const io::GgufFile& file);

}  // namespace ringlm::vision
