// The environment variables ringlm reads, all in one place: the library below src/cli takes
// every setting as an option (ModelOptions, EngineOptions, force_isa), so a program that
// embeds it is never steered by its environment behind its back.
//   RINGLM_THREADS=N            worker threads when --threads is not given (1..256)
//   RINGLM_ISA=NAME             force one SIMD path (kernels/dispatch.h), for A/B checks
//   RINGLM_Q4_PREFILL=0|1       the AVX-512 VNNI q4 prefill GEMM off/on (default off; same bits), for A/B timing
//   RINGLM_ATTENTION=tiled|reference   the float reference attention (decoder and vision tower), for A/B checks
//   RINGLM_LM_HEAD_SUBSET=auto|always|never   the guided LM-head subset policy (generator.h)
//   RINGLM_DEMO_MODEL=DIR       the model used when --model is omitted (demo_model.cpp; else XDG_CACHE_HOME / HOME)
//   HF_ENDPOINT, HF_TOKEN, HF_HOME, HF_HUB_CACHE   `ringlm pull` and --model ORG/NAME (cmd_pull.cpp, model_locator.cpp)
//   RINGLM_API_KEY=KEY          serve's API key when neither --api-key nor --api-key-file is given
#pragma once

#include <string>

#include "engine/engine.h"

namespace ringlm::cli {

// RINGLM_THREADS as a thread count, 0 when unset or empty; throws ringlm::Error when it is
// not an integer in 1..256.
int threads_from_env();

// Applied once by main() before any command runs: RINGLM_ISA (force_isa), RINGLM_Q4_PREFILL and RINGLM_THREADS
// (the size of the kernels' default thread pool). Throws ringlm::Error for bad values.
void apply_process_environment();

// RINGLM_ATTENTION: true for "reference", false when unset, empty or "tiled".
bool reference_attention_from_env();
// RINGLM_PACKED_WEIGHTS=memory (default) or mapped: a converted directory's q4p16 weights
// copied to huge-page memory at load, or read from the file mapping (model::ModelOptions).
bool packed_weights_in_memory_from_env();
// RINGLM_LM_HEAD_SUBSET (unset or empty: Auto).
engine::EngineOptions::HeadSubset lm_head_subset_from_env();
// RINGLM_GREEDY_HEAD=on|off (default on): engine::EngineOptions::greedy_head.
bool greedy_head_from_env();

// RINGLM_API_KEY ("" when unset): a key kept out of the command line, which `ps` shows.
std::string api_key_from_env();

}  // namespace ringlm::cli
