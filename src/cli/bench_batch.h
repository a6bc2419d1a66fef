// `ringlm bench --sections batch`: continuous-batching throughput (cmd_bench_batch.cpp).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"

namespace ringlm::cli {

struct BenchBatchOptions {
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16};
  int prompt_tokens = 128;       // per sequence, the same for all
  int decode_tokens = 32;        // per sequence
  std::vector<int> extract_parallel = {1, 8};
  int extract_rows = 32;
  int extract_max_tokens = 128;
};

// Aggregate and per-sequence decode tok/s at each batch size (all sequences decoding
// together), and extract-style guided rows/s at each --parallel over the same rows, with
// whether the outputs were identical across them.
nlohmann::ordered_json bench_batch(engine::Engine& engine, const BenchBatchOptions& o);

}  // namespace ringlm::cli
