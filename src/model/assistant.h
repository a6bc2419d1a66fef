// The Gemma 4 "assistant": Google's multi-token-prediction drafter shipped next to each
// Gemma 4 size (HF Gemma4AssistantForCausalLM, llama.cpp arch gemma4-assistant). Its
// architecture, tensor names and the points where the public sources disagree are in
// docs/speculative.md ("Assistant drafter").
//
// One step, for the token t at position p whose KV the target has not written yet:
//   x    = target_embed(t) * sqrt(B) ++ h          (B: the target's hidden size; h: the
//                                                   target's final-normed hidden state of
//                                                   position p-1, or the last step's h_next)
//   a    = pre_projection(x)                       [H]
//   per layer: sandwich-normed attention whose queries (q_proj, q_norm, RoPE at p) attend
//   the TARGET's cache (sliding layers: the cache the target's last sliding layer reads;
//   full layers: its last full layer's), then the sandwich-normed GELU MLP, times layer_scalar
//   f    = norm(a);  logits = embed . f  (tied; or the centroid head);  h_next = post_projection(f)
// Every draft step of one round uses the same position p (the KV stays the target's).
//
//   auto a = model::AssistantModel::load(path, opts);   // a directory (config.json +
//                                                       // model.safetensors) or a .gguf file
//   model::AssistantStep step(a, pool);                 // scratch, allocated once
//   step.run(x, p, sliding_kv, full_kv);                // x: [2B], as above
//   step.logits(); step.h_next(); step.argmax();
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "io/tensor.h"
#include "kernels/ref_matmul.h"
#include "kernels/q4_packed.h"
#include "kernels/ref_ops.h"
#include "model/config.h"
#include "model/model.h"

namespace ringlm::model {

struct AssistantConfig {
  std::string source;       // config.json path, for messages
  int backbone_hidden = 0;  // backbone_hidden_size: the target's hidden size
  // use_ordered_embeddings: the centroid head (E2B/E4B assistants).
  bool ordered_embeddings = false;
  int num_centroids = 0, centroid_top_k = 0;
  // The text_config, parsed as a Gemma 4 text config with no KV-owning layer: every layer
  // reads the target's cache (owns_kv false everywhere).
  ModelConfig text;
};

// Parses the assistant's config.json. Throws ringlm::Error naming the file and field on
// anything this implementation does not run (per-layer embeddings, MoE, a KV-owning layer,
// a vocabulary the centroids do not divide, ...).
AssistantConfig parse_assistant_config(const std::string& json_text, const std::string& source);

struct AssistantLayerWeights {
  std::vector<float> input_norm, post_attention_norm, pre_feedforward_norm, post_feedforward_norm, q_norm;
  kernels::WeightMatrix q_proj, o_proj, gate_proj, up_proj, down_proj;
  float layer_scalar = 1.0f;
};

// How the assistant's matrices run: the target's own choices (ModelOptions), so a drafter
// runs on the kernels its target runs on. The defaults are the float reference path.
struct AssistantOptions {
  // q4_0: float matrices are quantized to q4_0 at load (as the target's, q4_weights.h) and
  // run on the w4a8 kernels. Either way GGUF block matrices (Q4_0, Q8_0, K-quants) are
  // repacked into the kernels' layouts, exactly as the target's GGUF matrices are.
  WeightFormat weights = WeightFormat::stored;
  kernels::Q4Activations activations = kernels::Q4Activations::f32;
};

class AssistantModel {
 public:
  // PATH/config.json and PATH/model.safetensors (or sharded), or PATH a GGUF file
  // (model/assistant_gguf.h). Throws ringlm::Error naming the file and tensor on a missing
  // tensor, a wrong shape or dtype, or a token ordering that is not a permutation of the
  // vocabulary.
  static std::shared_ptr<const AssistantModel> load(const std::filesystem::path& path,
                                                    const AssistantOptions& options = {});
  // Binds an already parsed config and opened source (canonical names: those of the
  // safetensors checkpoint without "model."), then converts the matrices per `options`.
  // `display` names a tensor in messages as the file spells it (null: the canonical name);
  // `skip`: canonical names the source may have that are not weights (ignored).
  static std::shared_ptr<const AssistantModel> from_source(
      AssistantConfig config, std::unique_ptr<io::TensorSource> source, const AssistantOptions& options,
      const std::function<std::string(const std::string&)>& display = nullptr, const std::set<std::string>& skip = {});

  const AssistantConfig& config() const { return config_; }
  // Throws ringlm::Error unless this assistant fits `target` (hidden size, vocabulary, head
  // dims, KV heads, sliding window of the layers it attends).
  void check_target(const ModelConfig& target) const;
  // The target layers whose caches the sliding / full assistant layers read (the cache the
  // target's last layer of that kind reads); -1 when the assistant has no layer of that kind.
  static int target_kv_layer(const ModelConfig& target, AttentionKind kind);

  kernels::WeightMatrix embed, pre_projection, post_projection, centroids;
  std::vector<float> final_norm;
  std::vector<std::int32_t> token_ordering;  // [vocab]: centroid c owns entries c*V/C .. (c+1)*V/C
  std::vector<AssistantLayerWeights> layers;

 private:
  void convert_matrices(const AssistantOptions& options);
  AssistantConfig config_;
  std::unique_ptr<io::TensorSource> source_;
  std::vector<kernels::Q4PackedBuffer> converted_;  // owns the repacked / quantized copies
};

// One assistant step's scratch and outputs, sized at construction; run() allocates nothing.
class AssistantStep {
 public:
  AssistantStep(std::shared_ptr<const AssistantModel> model, kernels::ParallelFor* pool);
  // x: [2 * backbone_hidden] (scaled target embedding, then h). sliding / full: the target
  // caches (KvSlots of the layers target_kv_layer names; unused kinds may be empty). Keys at
  // positions >= position are not attended.
  void run(std::span<const float> x, std::int64_t position, const kernels::KvSlots& sliding,
           const kernels::KvSlots& full);
  // [vocab]: the dense tied head's logits, or with the centroid head the candidates' logits
  // and (min of those - 1) everywhere else, as transformers' Gemma4AssistantMaskedEmbedder.
  std::span<const float> logits() const { return logits_; }
  std::span<const float> h_next() const { return h_next_; }
  std::int32_t argmax() const;

 private:
  void head();
  std::shared_ptr<const AssistantModel> model_;
  kernels::ParallelFor* pool_;
  std::vector<float> h_, a_, q_, attn_, o_, gate_, up_, rope_, f_, logits_, h_next_, centroid_logits_, cand_logits_;
  std::vector<std::int32_t> top_, candidates_;
};

}  // namespace ringlm::model
