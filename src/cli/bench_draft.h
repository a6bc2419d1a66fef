// `ringlm bench --sections draft`: what speculative decoding costs and gains on this CPU
// (issue #33), without real weights (cmd_bench_draft.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace ringlm::cli {

struct BenchDraftOptions {
  int prompt_tokens = 128;   // filler prompt of the decode runs
  int decode_tokens = 96;    // generated per run (greedy, stop ids ignored)
  int repeats = 2;           // each figure is the best of this many runs
  int max_k = 8;             // verify cost for k = 1..max_k
  int k = 4;                 // drafted tokens per step of the acceptance runs
  int extract_rows = 10;     // ticket-extraction rows for prompt-lookup acceptance (0: skip)
  int extract_max_tokens = 128;
  // --draft-assistant PATH: also run the Gemma 4 assistant drafter (k drafted tokens per
  // step) and report its acceptance, the verify step's cost and the drafter's cost per round.
  std::string assistant;
  // --draft-rounds N > 0: instead of the figures above, N rounds that alternate no drafting,
  // no drafting on a drafting-capable scheduler, auto and always at each rate (the order
  // rotated per round), so auto's cost can be told from the host's noise
  // (cmd_bench_draft_rounds.cpp). --draft-warm: one scheduler per policy kept across the
  // rounds after one warm-up reply (as Generator and serve keep theirs), else a fresh one per run.
  int rounds = 0;
  bool warm = false;
  std::vector<double> rates = {0.0, 0.35, 0.7, 1.0};
};

// Per-step time with k = 0..max_k drafted rows (an always-rejected oracle: every step runs
// k + 1 rows and emits one token), decode tok/s at forced oracle acceptance 100/70/35/0 %
// with k, always drafting and with auto at each rate, each against no drafting, and the share of prompt-lookup
// (ngram) drafts accepted on the bench's guided ticket-extraction rows.
nlohmann::ordered_json bench_draft(engine::Engine& engine, const BenchDraftOptions& o);
nlohmann::ordered_json bench_draft_rounds(engine::Engine& engine, const BenchDraftOptions& o);

}  // namespace ringlm::cli
