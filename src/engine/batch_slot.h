// The scheduler's per-sequence state (internal to engine/batch_scheduler.cpp and
// engine/batch_draft.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/stop_rules.h"
#include "engine/batch_scheduler.h"
#include "engine/draft.h"
#include "guided/matcher.h"
#include "guided/work_budget.h"
#include "sampling/sampler.h"

namespace ringlm::engine {

struct BatchScheduler::Slot {
  Slot(const std::shared_ptr<const model::Model>& m, const model::SessionOptions& o, std::size_t mask_words)
      : session(m, o), mask(mask_words) {}

  model::Session session;
  std::vector<std::int32_t> cached;  // tokens the session's cache holds, in position order
  std::vector<std::uint32_t> mask;
  std::vector<std::int32_t> head_ids;
  std::vector<std::int64_t> positions;  // of this step's item
  std::vector<float> hidden_sum;        // an embedding request's sum of hidden rows ([hidden])

  // The request in flight (busy).
  bool busy = false;
  bool cancel_requested = false;
  std::uint64_t id = 0;
  std::uint64_t order = 0;  // admission order: older prompts prefill first
  std::vector<std::int32_t> prompt;
  GenerationParams params;
  TokenCallback on_token;
  std::function<void(SequenceOutcome&&)> on_done;
  std::size_t prompt_done = 0;  // prompt tokens in the cache
  std::size_t cache_limit = 0;  // prompt tokens the prefix cache may store (before any soft token)
  std::size_t cache_stored = 0; // prompt tokens offered to the prefix cache so far
  std::unique_ptr<guided::Matcher> matcher;
  guided::BudgetAccount budget;  // this request's mask work so far (GenerationParams::mask_budget)
  // Soft tokens (images, audio) of the prompt: the rows stay alive while the session uses them.
  std::shared_ptr<const PromptEmbeddings> media;
  std::vector<model::EmbeddingOverride> overrides;
  std::optional<sampling::Sampler> sampler;
  std::optional<StreamingDecoder> detok;
  chat::StopStringMatcher stop_strings;
  GenerationResult result;
  std::vector<std::int32_t> generated;
  std::vector<std::int32_t> pending;  // tokens to run at the next step (decoding)
  std::span<const std::int32_t> step_ids;  // what this step runs
  // Speculative decoding (batch_draft.cpp).
  std::unique_ptr<Drafter> drafter;   // null: no drafting
  int draft_max = 0;                  // k for this request
  DraftGovernor governor;
  int n_draft = 0;                    // drafted tokens at the end of pending this step
  int step_accepted = 0;              // of those, accepted (verify)
  std::vector<std::int32_t> draft;    // this step's drafted tokens
  std::vector<std::uint8_t> row_chunk;  // per pending row: see model::BatchItem::row_chunk
  bool use_row_chunk = false;         // this step's item runs its rows one by one
  bool pending_chunk = false;         // pending continues a chunk an accepted draft began
  // A drafter that reads the target (Drafter::wants_target_state): the final-normed hidden
  // row whose logits gave the last sampled token, known until the next draft round.
  std::vector<float> target_hidden;
  bool hidden_known = false;
  TokenEvent event;
  std::string piece;
  std::chrono::steady_clock::time_point t0;

  bool prefilling() const { return prompt_done < prompt.size(); }
};

}  // namespace ringlm::engine
