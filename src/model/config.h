// Gemma 4 text-decoder configuration, read from a Hugging Face config.json.
//
// Field names follow transformers' Gemma4TextConfig. The text config may be nested under
// "text_config" (multimodal checkpoints) or be the top-level object (text-only). Fields the
// HF class gives a default (head_dim 256, global_head_dim 512, sliding_window 512, ...) may
// be omitted; the shape-defining ones (hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, intermediate_size, layer_types) are required. Everything the forward
// pass needs is resolved here into per-layer entries, so the graph never reads JSON.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ringlm::model {

enum class AttentionKind { Sliding, Full };

const char* attention_kind_name(AttentionKind k);

struct RopeConfig {
  std::string type;                    // "default" or "proportional"
  double theta = 10000.0;
  double partial_rotary_factor = 1.0;
  double factor = 1.0;                 // linear scaling: inv_freq /= factor
  // inv_freq for pair i (i < head_dim / 2); zero for pairs that do not rotate.
  std::vector<double> inv_freq;
};

struct LayerConfig {
  AttentionKind kind = AttentionKind::Sliding;
  int head_dim = 0;
  int n_kv_heads = 0;
  int mlp_width = 0;            // intermediate size of this layer (doubled on shared layers)
  bool owns_kv = true;          // false: reads the cache of kv_source_layer
  int kv_source_layer = 0;      // this layer itself when it owns its KV
  const RopeConfig* rope = nullptr;  // points into ModelConfig (stable: set after copy)
};

struct ModelConfig {
  std::string source;  // the config.json path, for error messages

  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;         // sliding layers (and full layers unless overridden)
  int num_global_kv_heads = 0;  // full layers
  int head_dim = 0;             // sliding layers
  int global_head_dim = 0;      // full layers
  int num_kv_shared_layers = 0;
  bool use_double_wide_mlp = false;
  int ple_dim = 0;              // hidden_size_per_layer_input (0: no per-layer embeddings)
  int ple_vocab_size = 0;       // vocab_size_per_layer_input
  double final_logit_softcapping = 0.0;  // 0: none
  int sliding_window = 0;
  int max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = true;
  int bos_token_id = 2;
  int pad_token_id = 0;
  std::vector<int> eos_token_ids;

  RopeConfig rope_sliding;
  RopeConfig rope_full;
  std::vector<LayerConfig> layers;

  ModelConfig() = default;
  ModelConfig(const ModelConfig& other) { *this = other; }
  ModelConfig& operator=(const ModelConfig& other);

  int first_shared_layer() const { return num_layers - num_kv_shared_layers; }
};

// Parses config.json text; `source` names the file in error messages.
ModelConfig parse_model_config(const std::string& json_text, const std::string& source);
// Reads DIR/config.json.
ModelConfig load_model_config(const std::filesystem::path& dir);

}  // namespace ringlm::model
