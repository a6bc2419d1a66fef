// The decoder's forward pass over one step's token rows, which may belong to several
// sessions (model::BatchForward) or to one (Session::prefill). Internal to src/model.
//
// Rows are laid out segment after segment in the scratch. Everything but attention runs
// once over all rows: embeddings, norms, every linear layer (one matmul per weight, so the
// weights stream once per step however many sequences it advances), the MLP and the
// per-layer-input block. Attention runs per segment, against that segment's session cache
// and with exactly the call Session::prefill would make for the same chunk. On the q4_0
// path a row's arithmetic does not depend on the other rows (activations are quantized per
// row, each output is one row's dot products), so every row's result is bit-identical to the
// same chunk run alone (tests/model/batch_forward_test.cpp).
#pragma once

#include <cstdint>
#include <span>

#include "model/forward_scratch.h"
#include "model/model.h"

namespace ringlm::model::detail {

struct ForwardSegment {
  Session* session = nullptr;
  int n = 0;                 // token rows (at most Session::kMaxChunk)
  int first_logits_row = 0;  // rows >= this want the final hidden state (n: none)
  bool run_head = true;      // and their logits
  // Only the argmax of each logits row is used (greedy, no logprobs, penalties or mask):
  // when every head row of the step is such a row and the scratch has a greedy head, the
  // rows hold the exact logits of the candidates only, -inf elsewhere (model/greedy_head.h).
  bool argmax_only = false;
  // Null: attention for the whole segment at once (the chunk kernel, or the decode kernel
  // for one row). Else one flag per row, and each row runs alone, as the row of a step
  // that non-speculative decoding would have run: 0 = a one-token decode step (the pool's
  // slot split, the full caches' view ending at the row), 1 = a row of a longer chunk (one
  // row without the pool, which gives a chunk row's bits). Speculative verification sets it
  // so a verified row is bit-identical to the step it replaces (engine/draft.h).
  const std::uint8_t* row_chunk = nullptr;
  // Non-null: the final-normed rows >= first_logits_row are added here ([hidden_size]), see
  // model::BatchItem::hidden_sum.
  float* hidden_sum = nullptr;
  // Set by the pass: where the segment's logits rows start in the logits output (-1: none).
  int logits_row = -1;
  // Internal: the segment's first row in the scratch.
  int first_row = 0;
};

class ForwardPass {
 public:
  // The segments' ids and positions are in scratch.ids / scratch.pos, segment after segment.
  // Logits rows go to `logits` (room for every row that wants them), in segment order.
  ForwardPass(const Model& model, ForwardScratch& scratch, std::span<ForwardSegment> segments, float* logits);
  void run();

 private:
  void embed(int rows);
  void drop_prompt_rows();  // the KV-shared-layer skip, per segment
  void attention_block(int layer, int rows);
  void mlp_block(int layer, int rows);
  void finish(int rows);

  const Model& model_;
  const ModelConfig& cfg_;
  const ModelWeights& w_;
  ForwardScratch& s_;
  std::span<ForwardSegment> segs_;
  float* logits_;
};

}  // namespace ringlm::model::detail
