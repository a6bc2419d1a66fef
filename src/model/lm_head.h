// The LM head for a list of vocabulary rows only (the subset head of guided decoding): for
// one final-normed hidden vector h, logits[i] = softcap(W[ids[i]] . h), each bit-identical to
// the same row of the full head (matmul() over all rows, then soft_cap()), for every weight
// kind a Model holds: stored F32/F16/BF16 rows and plain GGUF block rows (one row each), and
// load-time packed q4_0 (whole 16-row q4p16 groups, the groups holding a listed row, with
// the full head's activation quantization).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/ref_matmul.h"
#include "kernels/ref_parallel.h"

namespace ringlm::model {

class LmHeadRows {
 public:
  LmHeadRows() = default;
  // `head` is the [vocab, hidden] LM head matrix; softcap <= 0 means none. Sizes the scratch
  // for the whole vocabulary, so compute() never allocates.
  LmHeadRows(const kernels::WeightMatrix& head, float softcap);

  // Rows the head computes per listed row: 16 (kernels::kQ4GroupRows) for a packed q4_0 head
  // on the w4a8 kernels, 1 otherwise. The cost of a call is about (distinct groups touched) x
  // granularity rows, against head.rows for the full head.
  std::size_t granularity() const;

  // out[i] = logit of ids[i] (any order, repeats allowed; each must be in [0, vocab)). `landing`
  // is a vocab-sized buffer a q4_0 head writes whole groups into (left holding those rows'
  // pre-cap values; untouched on the other paths). Throws ringlm::Error for a bad id.
  void compute(const float* h, std::span<const std::int32_t> ids, float* out, float* landing,
               kernels::ParallelFor* pool);

 private:
  kernels::WeightMatrix head_;
  float softcap_ = 0.0f;
  std::vector<std::uint32_t> groups_;   // distinct groups of the current ids
  std::vector<std::uint8_t> group_used_;  // per group, cleared after each call
};

}  // namespace ringlm::model
