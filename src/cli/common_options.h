// Options shared by the commands that load a model (run, chat, extract, bench, logits, and
// serve once it takes them): model selection (with the built-in demo model as the default),
// the weight/activation/thread flags, and sampling flags. Every command builds its model and
// engine options here, so a flag means the same thing, with the same default, everywhere.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "engine/engine.h"
#include "engine/generation.h"

namespace ringlm::cli {

struct ModelFlags {
  std::string model;   // empty: the built-in demo model
  std::string hf_repo;  // -hf ORG/NAME[:QUANT] (cli/hf_model.h), instead of --model
  std::string mmproj;  // empty: the towers of the model directory (if any)
  int ctx = 0;
  int threads = 0;
  int gpu_layers = 0;  // llama.cpp's -ngl: accepted, explained, ignored (no per-layer offload)
  std::string json_style = "compact";
  std::string schema_mode = "strict";
  std::string weights = "q4_0", activations = "int8x2", kv_type = "f16";
  std::string device = "cpu";  // --device cpu|vulkan[:N] (cli/compute_device.h)
  size_t grammar_cache_mb = 512, grammar_cache_entries = 256, mask_cache_mb = 128;

  // --model, --ctx, --threads, --weights, --activations; with `guided` also --json-style and
  // the grammar and mask cache bounds (commands that generate text). llama.cpp's spellings
  // are aliases where they mean the same: -m, -c/--ctx-size, -t, -ngl (see llama_aliases.h).
  void add_to(CLI::App* app, bool guided = true);
  mutable std::shared_ptr<backend::Device> opened_device;  // --device, once opened
  mutable std::string hf_model, hf_mmproj;                 // what -hf resolved to, once
  // Resolves the model directory (fetching -hf's repository if the cache lacks it; printing the demo notice to stderr when it is the demo
  // model). Throws ringlm::Error when there is no model at all.
  std::string model_dir() const;
  // --threads, else RINGLM_THREADS, else 0 (the library default).
  int thread_count() const;
  // Threads, weights, activations, the device and RINGLM_ATTENTION, for commands that load a
  // Model. Opens the --device once (throws ringlm::Error naming what is missing).
  model::ModelOptions model_options() const;
  // model_dir() and model_options() plus the guided and cache flags and RINGLM_LM_HEAD_SUBSET.
  engine::EngineOptions engine_options() const;
};

struct SamplingFlags {
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repeat_penalty = 1.0f;
  unsigned long long seed = 0;
  int max_tokens = 256;

  void add_to(CLI::App* app);
  engine::GenerationParams params() const;
};

// --draft and --draft-max (speculative decoding, engine/draft.h): the same flags and
// default on run, chat, serve and extract. params() parses them (throws ringlm::Error
// naming the flag) before any model loads.
struct DraftFlags {
  std::string draft{engine::kDefaultDraft};
  int draft_max = engine::kDefaultDraftMax;

  void add_to(CLI::App* app);
  engine::DraftParams params() const;
};

// Validator of a thread count: a clear message when `-t 0.7` was meant as a temperature
// (-t is --threads, as in llama.cpp).
CLI::Validator thread_count_validator();

// Reads a whole file ("-" = standard input); throws ringlm::Error naming it.
std::string read_text_file(const std::string& path);

// Says on stderr (once per process) when the context leaves room for fewer than
// `max_tokens` new tokens after a prompt of `prompt_tokens`, so a reply cut by --ctx is not
// mistaken for one cut by --max-tokens.
void warn_if_context_cuts(std::size_t prompt_tokens, int max_tokens, std::int64_t context_capacity);

}  // namespace ringlm::cli
