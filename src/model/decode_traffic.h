// How many bytes one decode step has to read: every weight matrix the step multiplies (in
// the format it is held in) plus the KV rows attention visits. Divided by the machine's
// read bandwidth this is the decode floor `ringlm bench` compares its decode time with:
// a GEMV-bound decoder cannot beat it, so the ratio says how much is left on the table.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/config.h"
#include "model/weights.h"

namespace ringlm::model {

struct DecodeTraffic {
  std::uint64_t weight_bytes = 0;  // matrices read once per token (the LM head included)
  std::uint64_t kv_bytes = 0;      // K and V rows read at the given context length
  std::uint64_t total() const { return weight_bytes + kv_bytes; }
};

// Bytes a matrix occupies as the matmul reads it (packed q4_0 counts its 16-row padding).
std::uint64_t matrix_bytes(const WeightMatrix& w);

// Traffic of one decode step with `context` tokens already in the cache. Embedding and
// per-layer-embedding rows are gathers of a few KB and are not counted.
// kv_element_bytes: 4 for an f32 KV cache, 2 for f16.
DecodeTraffic decode_traffic(const ModelConfig& config, const ModelWeights& weights, std::int64_t context,
                             std::size_t kv_element_bytes = sizeof(float));

}  // namespace ringlm::model
