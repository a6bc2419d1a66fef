#include "engine/assistant_drafter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <string>

#include "engine/engine.h"
#include "kernels/ref_matmul.h"
#include "util/error.h"
#include "util/splitmix.h"

namespace ringlm::engine {

std::uint64_t AssistantDrafter::draft_seed(std::uint64_t request_seed) {
  return splitmix64_next(request_seed);
}

AssistantDrafter::AssistantDrafter(std::shared_ptr<const model::AssistantModel> assistant,
                                   std::shared_ptr<const model::Model> target, const sampling::SamplerParams& sampling)
    : assistant_(std::move(assistant)), target_(std::move(target)), step_(assistant_, target_->pool()) {
  const model::ModelConfig& t = target_->config();
  assistant_->check_target(t);
  sliding_layer_ = model::AssistantModel::target_kv_layer(t, model::AttentionKind::Sliding);
  full_layer_ = model::AssistantModel::target_kv_layer(t, model::AttentionKind::Full);
  x_.resize(2 * static_cast<std::size_t>(t.hidden_size));
  if (sampling.temperature > 0.0f) {
    // The request's temperature and truncation; no repetition penalty (q need not be p's
    // shape for the rule to hold, and the drafter would need the drafts so far as history).
    draft_params_.temperature = sampling.temperature;
    draft_params_.top_k = sampling.top_k;
    draft_params_.top_p = sampling.top_p;
    draft_params_.min_p = sampling.min_p;
    draft_params_.seed = draft_seed(sampling.seed);
    sampler_.emplace(draft_params_, static_cast<std::int32_t>(step_.logits().size()));
  }
}

void AssistantDrafter::propose(std::span<const std::int32_t>, std::span<const std::int32_t>, int max,
                               std::vector<std::int32_t>& out) {
  const TargetState st = state_;
  state_ = {};  // one round per state
  n_q_ = 0;
  const std::size_t B = x_.size() / 2;
  if (max <= 0 || !st.session || st.hidden.size() != B) return;
  const auto t0 = std::chrono::steady_clock::now();
  // The caches as the target holds them now (positions 0 .. p - 1; sliding rings wrap, each
  // slot knows its position, and the window mask picks the last window - 1 keys).
  // A target on a device: host copies of the two caches, brought up to date here (only the
  // rows written since the last round are read back).
  int layers[2], n_layers = 0;
  for (const int l : {sliding_layer_, full_layer_})
    if (l >= 0) layers[n_layers++] = l;
  st.session->mirror_kv(std::span<const int>(layers, static_cast<std::size_t>(n_layers)));
  const kernels::KvSlots sliding = sliding_layer_ >= 0 ? st.session->kv_view(sliding_layer_) : kernels::KvSlots{};
  const kernels::KvSlots full = full_layer_ >= 0 ? st.session->kv_view(full_layer_) : kernels::KvSlots{};
  const kernels::WeightMatrix& embed = target_->weights().embed_tokens;
  const float scale = std::sqrt(static_cast<float>(B));  // as the target scales its own embeddings
  std::copy(st.hidden.begin(), st.hidden.end(), x_.begin() + static_cast<std::ptrdiff_t>(B));
  std::int32_t token = st.token;
  for (int j = 0; j < max; ++j) {
    kernels::gather_rows(embed, &token, 1, 0, static_cast<std::int64_t>(B), scale, x_.data());
    step_.run(x_, st.position, sliding, full);
    ++steps_;
    if (observer_) observer_(j, step_);
    if (sampler_) {
      // Sampled draft: q_j = the distribution the draw used (see the header).
      if (q_.size() <= static_cast<std::size_t>(j)) q_.resize(static_cast<std::size_t>(j) + 1);
      std::vector<float>& q = q_[static_cast<std::size_t>(j)];
      const std::span<const float> logits = step_.logits();
      q.assign(logits.begin(), logits.end());  // sized once per step index, then reused
      token = sampler_->sample(q, nullptr, {});
      sampler_->last_distribution(q);
      n_q_ = static_cast<std::size_t>(j) + 1;
    } else {
      token = step_.argmax();
    }
    out.push_back(token);
    const std::span<const float> h = step_.h_next();
    std::copy(h.begin(), h.end(), x_.begin() + static_cast<std::ptrdiff_t>(B));
  }
  step_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::filesystem::path find_assistant_dir(const std::filesystem::path& model_path) {
  namespace fs = std::filesystem;
  std::vector<fs::path> tried;
  const bool file = fs::is_regular_file(model_path);
  fs::path base = model_path;
  while (!file && base.has_parent_path() && base.filename().empty()) base = base.parent_path();  // "dir/"
  if (!file) tried.push_back(base / "assistant");
  tried.push_back(base.parent_path() / ((file ? base.stem() : base.filename()).string() + "-assistant"));
  std::string looked;
  for (const fs::path& d : tried) {
    if (fs::is_regular_file(d / "config.json")) return d;
    fs::path gguf = d;
    gguf += ".gguf";  // MODEL/assistant.gguf, MODEL-assistant.gguf (model/assistant_gguf.h)
    if (fs::is_regular_file(gguf)) return gguf;
    looked += (looked.empty() ? "" : ", ") + (d / "config.json").string() + ", " + gguf.string();
  }
  fail("--draft assistant: no assistant checkpoint found next to the model ", model_path.string(), " (looked for ",
       looked, "); give its directory or .gguf file as --draft assistant:PATH");
}

std::shared_ptr<const model::AssistantModel> load_assistant(const Engine& engine, std::string_view path) {
  namespace fs = std::filesystem;
  const fs::path dir = path.empty() ? find_assistant_dir(engine.options().model_dir) : fs::path(std::string(path));
  if (!fs::exists(dir)) fail("--draft assistant:", dir.string(), ": no such file or directory");
  // One copy per checkpoint while any drafter uses it: the server and batch jobs make a
  // drafter per request.
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<const model::AssistantModel>> loaded;
  // The assistant's matrices run as the target's do (its --weights and --activations).
  const model::ModelOptions& target = engine.model()->options();
  const model::AssistantOptions options{target.weights, target.activations};
  const std::string key = fs::weakly_canonical(dir).string() + "|" + std::to_string(static_cast<int>(options.weights)) +
                          "|" + std::to_string(static_cast<int>(options.activations));
  std::shared_ptr<const model::AssistantModel> a;
  {
    std::lock_guard<std::mutex> lock(mu);
    a = loaded[key].lock();
    if (!a) {
      a = model::AssistantModel::load(dir, options);
      loaded[key] = a;
    }
  }
  a->check_target(engine.model()->config());
  return a;
}

}  // namespace ringlm::engine
