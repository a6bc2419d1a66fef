// Continuous batching: many generations advanced together, one forward pass per step.
//
//   engine::BatchScheduler sched(engine, {.max_sequences = 8});
//   sched.admit({prompt, params, on_token, on_done});   // while sched.has_room()
//   while (sched.step() > 0) { /* admit more, cancel some */ }
//
// The scheduler owns max_sequences slots, each a model::Session with the tokens its cache
// holds. admit() puts a request on the free slot whose cache shares the longest prefix with
// its prompt (a follow-up turn reuses its KV) and, failing that, copies a pinned prefix
// (pin_prefix: e.g. extract's instructions + schema) instead of recomputing it, or takes it
// from the cross-request prefix cache (options.prefix_cache_bytes) when that holds more: the
// prompt blocks every prefilling slot computed are stored there as they complete. Each step()
// runs one model::BatchForward pass over every active sequence: the pending tokens of the
// decoding ones (a sampled token plus any tokens the grammar forces) and the next prompt
// chunk of the prefilling ones, as long as the step's row budget lasts (decode rows first, so
// a long new prompt never stalls the others). Prompts are chunked exactly as
// Session::prefill would chunk them from the reused point, so on the q4_0 path a sequence's
// tokens, logprobs and text are bit-identical to the same request run alone (Generator) and
// do not depend on what else is in the batch.
//
// Per sequence: its own sampler (seed), grammar matcher (the deferred LM head computes only
// the allowed rows when that pays; otherwise the guided rows share one pass over the head),
// stop ids, stop strings, max_tokens, logprobs. A sequence finishes at a stop or limit, or is
// cancelled (cancel(), or its on_token returning false) at the next step without stalling
// the others; its slot is free for the next admit at once.
//
// Not thread-safe: one thread calls admit/cancel/step, and the callbacks run on it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/draft_governor.h"
#include "engine/engine.h"
#include "engine/generation.h"
#include "engine/generator.h"
#include "engine/prefix_cache.h"
#include "model/batch_forward.h"

namespace ringlm::engine {

struct BatchSchedulerOptions {
  int max_sequences = 8;   // slots: sequences in flight
  int context_tokens = 0;  // full-attention KV capacity per slot; 0: the engine's
  int max_rows = 0;        // token rows per step; 0: max_sequences + Session::kMaxChunk
  // true: a request reuses the longest prefix its slot's cache shares with it (serve: a
  // follow-up turn). false: only the pinned prefix, so every request computes exactly the
  // same chunks whatever ran on its slot before (extract: results independent of --parallel).
  bool reuse_slot_cache = true;
  // Prompt-prefix KV kept across requests (engine/prefix_cache.h), in bytes; 0: none. With
  // it a request reuses the longest cached run of 16-token prompt blocks, whichever slot
  // computed them. serve sets it (--prefix-cache-mb); extract keeps 0 (results must not
  // depend on what ran before).
  std::size_t prefix_cache_bytes = 0;
  // Speculative decoding (engine/draft.h): the most drafted tokens a sequence may verify per
  // step (a request's DraftParams::max_tokens is capped by it). 0: requests never draft.
  // Room for the extra logits rows is allocated up front (max_sequences * draft_max rows
  // of vocab floats), and max_rows's default grows by the same number of rows.
  int draft_max = 0;
};

struct SequenceOutcome {
  GenerationResult result;
  std::string error;  // non-empty: the request failed (the engine rejected it mid-way)
};

struct SequenceRequest {
  std::vector<std::int32_t> prompt;
  GenerationParams params;
  TokenCallback on_token;                                 // may be null; false cancels
  std::function<void(SequenceOutcome&&)> on_done;         // called exactly once
};

struct BatchStats {
  std::uint64_t steps = 0;
  std::uint64_t rows = 0;            // token rows run, over all steps
  std::uint64_t sequence_steps = 0;  // sum over steps of the sequences advanced
  std::uint64_t prefix_copies = 0;   // admits that copied the pinned prefix
  std::uint64_t prefix_hits = 0;     // admits that reused any cached prompt KV
  std::uint64_t prefix_misses = 0;   // admits with a whole 16-token block that reused none
  std::uint64_t reused_tokens = 0;   // prompt tokens not recomputed (slot cache, pin or prefix cache)
  std::uint64_t drafted = 0;         // speculative decoding: tokens drafted and verified
  std::uint64_t accepted = 0;        // of those, accepted
  std::uint64_t draft_rounds = 0;    // drafter calls that proposed at least one token
  double draft_seconds = 0;          // wall time in those drafter calls (bench: a drafter's cost)
  int last_batch = 0;                // sequences in the last step
  PrefixCacheStats prefix_cache;     // the cross-request prefix cache (zeros when off)
};

class BatchScheduler {
 public:
  BatchScheduler(Engine& engine, const BatchSchedulerOptions& options = {});
  ~BatchScheduler();
  BatchScheduler(const BatchScheduler&) = delete;
  BatchScheduler& operator=(const BatchScheduler&) = delete;

  bool has_room() const;
  int active() const;
  int max_sequences() const { return static_cast<int>(slots_.size()); }
  int context_capacity() const;
  // Starts a request on a free slot and returns its id. Throws ringlm::Error for a bad
  // request (empty or too long prompt, bad token id, schema that does not compile, no free
  // slot) before anything changes; on_done is then never called.
  std::uint64_t admit(SequenceRequest request);
  // Finishes that sequence as Cancelled at the next step (no-op for an unknown/finished id).
  void cancel(std::uint64_t id);
  void cancel_all();
  // Advances every active sequence by one batched forward pass; returns how many it
  // advanced (0: nothing active).
  int step();

  // Runs one request to its end with nothing else in flight (admit, then step until it is
  // done) and returns its result; throws ringlm::Error for a rejected request or one that
  // failed mid-way. Generator uses it for requests that draft (engine/draft.h): speculative
  // verification lives here only.
  GenerationResult generate(std::vector<std::int32_t> prompt, const GenerationParams& params,
                            const TokenCallback& on_token);
  // The tokens slot i's cache holds (a follow-up prompt may be respelled to match them).
  std::span<const std::int32_t> slot_cached(int i) const;

  // Prefills `prefix` once on a private session; admits whose prompt starts with it copy its
  // KV instead of computing it (when their slot's own cache shares less).
  void pin_prefix(std::span<const std::int32_t> prefix);
  // The greedy LM head's counters (model/greedy_head.h); null when the batch runs none.
  const model::GreedyHead::Stats* greedy_head_stats() const { return batch_->greedy_head_stats(); }
  const BatchStats& stats() const {
    if (prefix_cache_) stats_.prefix_cache = prefix_cache_->stats();
    return stats_;
  }
  // The measured step costs the adaptive drafting policy weighs drafts with (bench figures).
  const StepCosts& step_costs() const { return step_costs_; }
  // KV cache bytes allocated over all slots (and the pinned prefix).
  std::size_t kv_bytes() const;
  // Tokens held in the slots' caches (for /metrics).
  std::int64_t kv_tokens_used() const;
  void set_head_subset(const HeadSubsetPolicy& policy);

  struct Slot;  // implementation detail (batch_scheduler.cpp)

 private:
  void finish(Slot& slot, FinishReason reason, std::string error = {});
  // After a step: sample, emit, stop checks; queue the next tokens.
  void advance(Slot& slot, std::span<float> logits);
  bool argmax_only(const Slot& slot) const;
  void guided_head(Slot& slot, std::size_t vocab);
  // Speculative decoding (batch_draft.cpp): the step's draft for a decoding slot, appended
  // to its pending tokens (at most `room` tokens); after the step, the rows checked in order.
  // base_rows / sequences: the step's decode rows (with earlier slots' drafts) and decoding
  // sequences, for the adaptive policy (DraftGovernor::choose).
  void make_draft(Slot& slot, int room, int base_rows, int sequences);
  void verify(Slot& slot, std::size_t item);
  // Keeps the target's hidden row of the token just sampled, for a drafter that reads it.
  void keep_hidden(Slot& slot, std::span<const float> row);
  void verify_rows(Slot& slot, std::size_t item, std::size_t base, int k);
  // Reports one accepted token (stream, stop strings, limits); false when generation ends
  // (slot.result.finish says why).
  bool emit(Slot& slot, std::int32_t id, float logprob, bool sampled, std::span<const float> logits);
  // Appends the tokens the grammar forces next to slot.pending (up to `limit` pending
  // tokens); false when that finished the slot.
  bool queue_forced(Slot& slot, std::size_t limit);
  // Forgets cached positions >= n (drafted tokens that were not accepted).
  void rollback(Slot& slot, std::size_t n);

  Engine& engine_;
  BatchSchedulerOptions options_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::unique_ptr<model::BatchForward> batch_;
  std::unique_ptr<model::Session> pinned_session_;
  std::vector<std::int32_t> pinned_;
  HeadSubsetPolicy head_policy_;
  std::size_t head_row_limit_ = 0;
  std::uint64_t next_id_ = 1;
  mutable BatchStats stats_;
  // Seconds per decode / verify step by row count (steps without prompt rows), measured
  // while any request may draft: what the adaptive drafting policy weighs drafts against.
  StepCosts step_costs_;
  std::unique_ptr<PrefixCache> prefix_cache_;  // null when options.prefix_cache_bytes == 0
  // Per-step scratch, sized once.
  std::vector<model::BatchItem> items_;
  std::vector<Slot*> item_slot_;
  std::vector<model::Session*> full_head_;
  std::vector<Slot*> full_head_slot_;
};

}  // namespace ringlm::engine
