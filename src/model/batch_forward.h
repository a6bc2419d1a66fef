// One forward pass that advances several sessions at once (continuous batching).
//
//   model::BatchForward batch(model, {.max_rows = 80, .max_items = 16});
//   model::BatchItem items[] = {{&a, ids_a, pos_a, LogitsMode::Last},     // a decode row
//                               {&b, chunk_b, pos_b, LogitsMode::None},   // a prefill chunk
//                               {&c, ids_c, pos_c, LogitsMode::Hidden}};  // a guided row
//   batch.run(items);
//   auto la = batch.logits(0);           // a's next-token logits (editable in place)
//   auto lc = c.head_logits_rows(ids);   // c's deferred head, as after c.decode_hidden()
//
// Each item is one call of Session::prefill on its session (at most Session::kMaxChunk
// tokens; LogitsMode None, Last or Hidden), and leaves the session exactly as that call
// would: same cache contents, same kept hidden state, same logits. Every linear layer runs
// once over all the items' rows, so a step's weights stream from memory once however many
// sequences it advances; attention runs per item against its own session's cache. On the
// q4_0 path (the w4a8 kernels quantize activations per row) every item's logits are
// bit-identical to its session run alone with the same chunks; on the float path they agree
// to float rounding (the reference matmul groups 4 tokens per dot pass).
//
// Nothing is allocated per run once constructed (apart from a kernel's per-thread buffers
// growing to the largest row count once). Not thread-safe; sessions must share the model.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/device_forward.h"
#include "model/forward_pass.h"
#include "model/model.h"

namespace ringlm::model {

struct BatchItem {
  Session* session = nullptr;
  std::span<const std::int32_t> ids;
  std::span<const std::int64_t> positions;
  LogitsMode mode = LogitsMode::Last;
  // LogitsMode::Last: the logits of the last logits_rows tokens (speculative verification:
  // the last real token's and each drafted token's), rows logits(i, 0 .. logits_rows - 1).
  int logits_rows = 1;
  // Null, or one flag per token: see detail::ForwardSegment::row_chunk.
  const std::uint8_t* row_chunk = nullptr;
  // Non-null (LogitsMode::None only): every row runs every layer and its final-normed hidden
  // state is added to hidden_sum[0 .. hidden_size) (mean-pooled embeddings, /v1/embeddings).
  // The cache ends as it would without it. CPU only: a device model refuses it.
  float* hidden_sum = nullptr;
  // LogitsMode::Last: only the argmax of each logits row will be used (greedy sampling, no
  // logprobs, penalties, bias or mask). A step whose logits rows are all such rows runs the
  // greedy head (BatchOptions::greedy_head): each row then holds the full head's exact
  // logits at its candidates and -inf elsewhere, so its first argmax is the full head's.
  bool argmax_only = false;
};

struct BatchOptions {
  int max_rows = 80;   // token rows per run, over all items
  int max_items = 16;  // sessions per run
  int max_logits_rows = 0;  // logits rows per run (Last items' rows + head_logits rows); 0: max_items
  // Keep the final-normed hidden row of every logits row (hidden()): a drafter that reads the
  // target's state (the Gemma 4 assistant, engine/assistant_drafter.h) needs the row that
  // produced the sampled token, which in a verify step need not be the item's last. Costs
  // one copy of those rows per run into a buffer sized once (on a device: read back).
  bool keep_hidden_rows = false;
  // Run the bounded one-plane head (model/greedy_head.h) for steps whose logits rows are all
  // BatchItem::argmax_only, where the model supports it (Model::greedy_head_bounds).
  bool greedy_head = true;
};

class BatchForward {
 public:
  BatchForward(std::shared_ptr<const Model> model, const BatchOptions& options);

  // Validates every item first (ids, positions, the cache's room, one item per session,
  // the row and item limits) and throws ringlm::Error naming the item before any session
  // changes; then runs them all as one step.
  void run(std::span<const BatchItem> items);
  // The last token's logits of item i of the last run (LogitsMode::Last only), valid until
  // the next run. The caller may edit them in place (a sampler).
  std::span<float> logits(std::size_t i) { return logits(i, 0); }
  // Row r (< the item's logits_rows) of item i's logits, oldest token first.
  std::span<float> logits(std::size_t i, int r);
  // The final-normed hidden state ([hidden_size]) logits(i, r) was computed from, valid until
  // the next run. Needs BatchOptions::keep_hidden_rows; throws ringlm::Error otherwise.
  std::span<const float> hidden(std::size_t i, int r) const;

  // The full LM head over the kept hidden states of several sessions (each as its own
  // head_logits() would compute it, bit for bit on the q4_0 path), in one pass over the
  // head's weights: the guided rows whose grammar allows too much for a subset head. Row j
  // is head_row(j), valid until the next run or head_logits call; logits(i) stay valid.
  // At most max_logits_rows minus the last run's logits rows.
  void head_logits(std::span<Session* const> sessions);
  std::span<float> head_row(std::size_t j);

  int max_rows() const { return options_.max_rows; }
  int max_items() const { return options_.max_items; }
  // The greedy head's statistics (null when this batch runs none).
  const GreedyHead::Stats* greedy_head_stats() const { return greedy_ ? &greedy_->stats() : nullptr; }
  const Model& model() const { return *model_; }

 private:
  void run_on_device(std::span<const BatchItem> items);

  std::shared_ptr<const Model> model_;
  BatchOptions options_;
  // On a device model: the step runs there (the host scratch is not sized).
  std::unique_ptr<detail::DeviceForward> device_;
  std::vector<detail::DeviceSegment> device_segs_;
  detail::ForwardScratch scratch_;
  std::unique_ptr<GreedyHead> greedy_;  // see BatchOptions::greedy_head
  std::vector<detail::ForwardSegment> segs_;
  std::vector<int> logits_row_;  // per item of the last run: its row in logits_, -1 none
  std::vector<int> logits_count_;  // per item of the last run: its logits rows
  std::vector<float> logits_;    // [max_logits_rows][vocab]: Last items, then head_logits rows
  std::vector<float> hidden_;    // [max_logits_rows][hidden]: keep_hidden_rows only, Last items' rows
  int used_rows_ = 0;            // logits_ rows the last run filled
  int head_rows_ = 0;            // rows of the last head_logits call, after used_rows_
};

}  // namespace ringlm::model
