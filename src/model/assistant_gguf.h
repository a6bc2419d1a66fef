// The Gemma 4 assistant (model/assistant.h) in a GGUF file: general.architecture
// "gemma4-assistant", the tensor names of llama.cpp's converter, and the gemma4 text
// metadata under the "gemma4-assistant." prefix (io/gguf_gemma4.h) plus the keys below. The
// table of names and keys is in docs/speculative.md ("The assistant as a GGUF file").
//
//   gemma4-assistant.embedding_length_out       the target's hidden size (backbone_hidden_size)
//   gemma4-assistant.nextn_predict_layers       = block_count (optional; checked)
//   gemma4-assistant.masked_embedding.top_k     centroids kept by the centroid head (default 32)
//   gemma4-assistant.masked_embedding.centroid_count   (optional; checked against the tensor)
// The centroid head is used when the file has masked_embd_centroids.weight and
// masked_embd_ordering (llama.cpp's converter drops them; its files get the dense head).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "io/gguf_reader.h"
#include "io/tensor.h"
#include "model/assistant.h"

namespace ringlm::model {

inline constexpr char kAssistantGgufArch[] = "gemma4-assistant";

// GGUF name -> the canonical name AssistantModel binds ("nextn.pre_projection.weight" ->
// "pre_projection.weight", "blk.2.attn_q.weight" -> "layers.2.self_attn.q_proj.weight"),
// or nullopt for a name the layout does not have; and the inverse, for writing.
std::optional<std::string> assistant_canonical_name(std::string_view gguf_name);
std::optional<std::string> assistant_gguf_name(std::string_view canonical_name);

// The config (as parse_assistant_config would read the matching config.json). Throws
// ringlm::Error naming the file and the key or tensor.
AssistantConfig assistant_gguf_config(const io::GgufFile& file);

// Loads a gemma4-assistant GGUF file (what AssistantModel::load does for a .gguf path).
std::shared_ptr<const AssistantModel> load_assistant_gguf(const std::filesystem::path& path,
                                                          const AssistantOptions& options = {});

// Writes an assistant checkpoint (`source`: canonical names; `config`: its config.json) as a
// gemma4-assistant GGUF file whose matrices are `matrix_type` (F32, F16, BF16, Q8_0, Q4_0,
// ...: as export_gemma4_gguf converts them); vectors F32, the token ordering I32.
void export_assistant_gguf(const io::TensorSource& source, const nlohmann::json& config,
                           const std::filesystem::path& out, io::DType matrix_type);

}  // namespace ringlm::model
