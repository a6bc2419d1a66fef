// One generation stream over one KV session: prompt in, tokens out, with sampling, JSON
// Schema constraints, stop ids and stop strings.
//
// The session remembers which tokens its KV cache holds; a new prompt that starts with them
// reuses their KV and prefills only the rest (multi-turn chat, shared prompt prefixes).
// pin_prefix() additionally keeps a copy of the sliding-window rings after a prefix, so
// a batch job can return to it after any amount of generation.
#pragma once

#include <cstdint>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "engine/engine.h"
#include "engine/generation.h"
#include "model/model.h"

namespace ringlm::engine {

// When a guided step computes only the grammar-allowed rows of the LM head. The mask never
// depends on the logits, so it is filled first; if the head would then compute at most
// max_share of the vocabulary's rows (counting whole 16-row groups for a q4_0 head), only
// those rows are computed (model::Session::head_logits_rows) and the rest are -inf, which the
// mask makes them anyway: the sampler sees the same allowed values, so tokens, logprobs and
// top_logprobs are identical to the full head's.
struct HeadSubsetPolicy {
  enum class Mode { Auto, Always, Never };
  Mode mode = Mode::Auto;
  // Measured (docs/bench/lmhead.md): at half the rows the subset head costs at most ~0.6 of
  // the full one (BF16 rows read out of order; q4_0 groups), and it stops paying at ~80-100%.
  // Allowed sets are in practice either tiny (keys, enums, digits) or almost the whole
  // vocabulary (free strings), so the exact limit rarely matters.
  double max_share = 0.5;
};

class BatchScheduler;

class Generator {
 public:
  explicit Generator(Engine& engine, const model::SessionOptions& options = {});
  ~Generator();

  // Generates a continuation of `prompt`. Throws ringlm::Error for a bad request (empty or
  // too long prompt, schema that does not compile); the session stays usable.
  // A request that drafts (params.draft.source != none) runs on a one-sequence
  // BatchScheduler made at its first use (its own KV session, kept for the next drafting
  // request): speculative verification has one implementation, the batched one. Its
  // output is identical to this Generator's on the q4_0 path (engine/draft.h).
  GenerationResult generate(std::span<const std::int32_t> prompt, const GenerationParams& params,
                            const TokenCallback& on_token);

  // Prefills `prefix` (reusing what the cache already holds) and snapshots the KV state
  // after it, so later prompts starting with it never recompute it.
  void pin_prefix(std::span<const std::int32_t> prefix);

  // Tokens whose keys and values the session holds, in position order.
  std::span<const std::int32_t> cached_tokens() const { return cached_; }
  model::Session& session() { return session_; }
  // Default: Auto, unless the environment variable RINGLM_LM_HEAD_SUBSET is auto, always or
  // never (read at construction; for benchmarks and A/B checks).
  void set_head_subset(const HeadSubsetPolicy& policy);
  const HeadSubsetPolicy& head_subset() const { return head_policy_; }
  Engine& engine() { return engine_; }
  void reset();

 private:
  // Makes the cache hold a prefix of `prompt` (as long as possible, at most size - 1 tokens
  // so there is a last token to compute logits from) and returns its length.
  // Never reuses past max_reuse tokens, nor past media_from_.
  std::size_t reuse_prefix(std::span<const std::int32_t> prompt, std::size_t max_reuse = SIZE_MAX);
  // Runs ids after the cached tokens. With_head false stops before the LM head (guided steps,
  // see guided_logits) and returns an empty span.
  std::span<float> run_tokens(std::span<const std::int32_t> ids, bool with_head = true);
  // The logits of the last token run, for a step whose allowed-token mask is mask_: only the
  // allowed rows when the policy says that pays (then *subset is set), else the full head.
  std::span<float> guided_logits(bool* subset);
  // Fills head_ids_ with the ids allowed by mask_; false (stopping early) once the head would
  // compute more than head_row_limit_ rows that way.
  bool collect_allowed_rows();
  // generate()'s steps: refuses a prompt or parameters it cannot run (Error naming them);
  // runs the prompt after its reused cached prefix (with the request's soft-token embeddings)
  // and returns the last token's logits (empty when `with_head` is false).
  void check_request(std::span<const std::int32_t> prompt, const GenerationParams& params) const;
  std::span<float> run_prompt(std::span<const std::int32_t> prompt, const GenerationParams& params,
                              GenerationResult& result, bool with_head);
  // `prompt`, or the same text spelled with the `cached` tokens where the model's own reply
  // was tokenized differently (engine/token_respelling.h); points into respelled_.
  std::span<const std::int32_t> in_cached_spelling(std::span<const std::int32_t> prompt,
                                                   std::span<const std::int32_t> cached);
  GenerationResult generate_drafted(std::span<const std::int32_t> prompt, const GenerationParams& params,
                                    const TokenCallback& on_token);

  Engine& engine_;
  model::Session session_;
  std::vector<std::int32_t> cached_;
  std::vector<std::uint32_t> mask_;
  std::vector<std::int64_t> positions_;
  std::vector<std::int32_t> pending_;
  std::vector<std::int32_t> pinned_;
  model::SessionSnapshot snapshot_;
  HeadSubsetPolicy head_policy_;
  std::size_t head_row_limit_ = 0;       // rows the subset head may compute (from the policy)
  std::vector<std::int32_t> head_ids_;   // allowed ids of a subset step (capacity head_row_limit_)
  // The first cached position whose KV came from soft tokens (images, audio): their ids are
  // placeholders that do not identify the content, so no later prompt reuses from there.
  std::size_t media_from_ = SIZE_MAX;
  std::vector<model::EmbeddingOverride> overrides_;
  std::vector<std::int32_t> respelled_;
  std::unique_ptr<BatchScheduler> drafting_;  // requests that draft; null until the first
  int drafting_max_ = 0;                      // its BatchSchedulerOptions::draft_max
};

}  // namespace ringlm::engine
