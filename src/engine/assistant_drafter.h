// The Gemma 4 assistant (model/assistant.h) as a draft source: `--draft assistant[:PATH]`.
//
// A round drafts k tokens from one position, as the assistant was trained to (docs/
// speculative.md, "Assistant drafter"): the scheduler hands over the target's state before
// propose() (Drafter::TargetState: the last sampled token t at position p, the target's
// final-normed hidden row of p - 1 that produced t, and the target session whose KV holds
// 0 .. p - 1). Step j runs the assistant on [target_embed(t_j) * sqrt(B), h_j] at position p,
// attending the caches the target's last sliding / last full layer read; its argmax is
// draft token j and t_{j+1}, its h_next is h_{j+1} (h_0 is the target's row).
//
// Under greedy decoding (temperature 0) drafts are the argmax over the centroid-narrowed or
// the dense head, as the checkpoint has it, proposed with certainty (Drafter::distribution
// stays empty), and the output is the plain output.
// Under sampling (temperature > 0) step j draws its draft from its own distribution
// q_j = the sampler's distribution over the step's logits (AssistantStep::logits(): with the
// centroid head, the candidates' logits and min - 1 elsewhere) after the request's
// temperature, top-k, min-p and top-p, without the repetition penalty and the grammar mask
// (sample_draft takes q given the mask); q_j is what distribution(j) returns, exactly the
// weights the draw used (sampling::Sampler::last_distribution), so the rejection rule keeps
// the target's distribution. The draws use the drafter's own generator, seeded from the
// request's seed through a fixed mix (draft_seed()): reproducible per seed, and independent
// of the target sampler's stream (the same stream would correlate a draft with the uniform
// that accepts it).
//
//   auto a = engine::load_assistant(engine, "");   // found next to the model (see below)
//   engine::AssistantDrafter d(a, engine.model());
//   d.set_target_state({&session, t, p, hidden});  d.propose(prompt, generated, k, out);
//
// Nothing is allocated per round (the step's scratch is sized at construction).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/draft.h"
#include "model/assistant.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace ringlm::engine {

class Engine;

class AssistantDrafter final : public Drafter {
 public:
  // Throws ringlm::Error when the assistant does not fit the target (AssistantModel::
  // check_target) or the target runs on a device (its KV is not readable on the host).
  // `sampling`: the request's parameters; temperature > 0 makes the drafts sampled (above).
  AssistantDrafter(std::shared_ptr<const model::AssistantModel> assistant, std::shared_ptr<const model::Model> target,
                   const sampling::SamplerParams& sampling = {});

  void propose(std::span<const std::int32_t> prompt, std::span<const std::int32_t> generated, int max,
               std::vector<std::int32_t>& out) override;
  bool wants_target_state() const override { return true; }
  void set_target_state(const TargetState& state) override { state_ = state; }
  // Sampled drafting: q of the j-th draft of the last round (vocabulary-sized). Empty under
  // greedy.
  std::span<const float> distribution(std::size_t j) const override {
    return j < n_q_ ? std::span<const float>(q_[j]) : std::span<const float>();
  }
  // The drafter's generator's seed for a request seed (a splitmix64 step: never the seed itself).
  static std::uint64_t draft_seed(std::uint64_t request_seed);
  // The parameters the drafter samples with (for tests and tools); temperature 0: greedy.
  const sampling::SamplerParams& draft_sampling() const { return draft_params_; }

  // Called after each assistant step of a round with its step index (tests, tools: the
  // logits of every step are compared with a float64 reference).
  void set_step_observer(std::function<void(int, const model::AssistantStep&)> f) { observer_ = std::move(f); }
  // Assistant steps run so far and their wall time (bench: the drafter's cost per round).
  std::uint64_t steps() const { return steps_; }
  double step_seconds() const { return step_seconds_; }

 private:
  std::shared_ptr<const model::AssistantModel> assistant_;
  std::shared_ptr<const model::Model> target_;
  model::AssistantStep step_;
  int sliding_layer_ = -1, full_layer_ = -1;  // target layers whose caches the assistant reads
  std::vector<float> x_;                      // [2 * backbone]: scaled embedding, then h
  TargetState state_;
  sampling::SamplerParams draft_params_;
  std::optional<sampling::Sampler> sampler_;  // present under sampling
  std::vector<std::vector<float>> q_;         // q_j per draft step, grown to the largest k once
  std::size_t n_q_ = 0;                       // q_j valid for j < n_q_
  std::function<void(int, const model::AssistantStep&)> observer_;
  std::uint64_t steps_ = 0;
  double step_seconds_ = 0.0;
};

// The assistant checkpoint for a target model at `model_path` when --draft assistant names
// none: MODEL_DIR/assistant, then the sibling MODEL_DIR-assistant (a GGUF file's: its stem
// + "-assistant" in the same directory), the first holding a config.json, or that path +
// ".gguf" (a gemma4-assistant GGUF file). Throws ringlm::Error listing where it looked.
std::filesystem::path find_assistant_dir(const std::filesystem::path& model_path);

// Loads the assistant at `path` (empty: find_assistant_dir(engine's model)) once per process
// while in use (later calls share it), and checks it fits the engine's model. Its matrices
// run as the model's do (AssistantOptions from its --weights / --activations). Thread-safe.
// Throws ringlm::Error naming the file and the mismatch.
std::shared_ptr<const model::AssistantModel> load_assistant(const Engine& engine, std::string_view path);

}  // namespace ringlm::engine
