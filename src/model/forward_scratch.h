// Per-token working buffers of one forward pass, sized once for a number of rows (the
// tokens of one step, over every sequence of a batch) and reused by every step.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/attention.h"
#include "model/config.h"

namespace ringlm::model {
class GreedyHead;
}

namespace ringlm::model::detail {

struct ForwardScratch {
  int rows = 0;  // capacity in token rows
  std::vector<std::int32_t> ids;
  std::vector<std::int64_t> pos;
  std::vector<float> h, a, q, k, v, attn, o, gate, up, ple_all, ple_tok, ple_g;
  std::vector<float> rope_sliding, rope_full;  // [rows][head_dim] cos|sin
  std::vector<kernels::AttendRow> attend_rows;  // a layer's decode rows, attended in one pool call
  // Non-null (BatchForward with the greedy head on): a step whose logits rows all belong to
  // argmax-only segments runs its head (model/greedy_head.h).
  GreedyHead* greedy_head = nullptr;

  void size_for(const ModelConfig& cfg, int n_rows);
};

}  // namespace ringlm::model::detail
