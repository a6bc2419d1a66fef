#include "cli/common_options.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "cli/compute_device.h"
#include "cli/environment.h"
#include "cli/hf_model.h"
#include "cli/model_locator.h"
#include "sampling/sampler.h"
#include "util/error.h"

namespace ringlm::cli {

void ModelFlags::add_to(CLI::App* app, bool guided) {
  auto* model_opt = app->add_option("--model,-m", model, "Model directory, .gguf file, or Hugging Face repo id in the local HF cache (default: the built-in demo model)");
  add_hf_option(app, hf_repo, model_opt);
  app->add_option("--mmproj", mmproj,
                  "Vision/audio towers from a llama.cpp mmproj GGUF file (gemma4v/gemma4a; `ringlm convert "
                  "--mmproj-out` writes one), e.g. next to a text-only --model x.gguf")
      ->check(CLI::ExistingFile);
  app->add_option("--ctx,-c,--ctx-size", ctx, "Full-attention KV capacity in tokens (default: 8192)");
  app->add_option("--threads,-t", threads, "Worker threads (default: RINGLM_THREADS, else all cores)")
      ->check(thread_count_validator());
  app->add_option("--n-gpu-layers,--gpu-layers", gpu_layers,
                  "Accepted for llama.cpp's -ngl; ringlm does not split a model by layers (--device picks where the "
                  "whole model runs), so N > 0 is ignored with a note (default: 0)");
  app->add_option("--weights", weights, "q4_0: linear layers in q4_0, quantized at load or as stored by ringlm convert, w4a8 kernels; "
                  "stored: float reference path over the stored weights (default: q4_0)")
      ->check(CLI::IsMember({"stored", "q4_0"}));
  app->add_option("--activations", activations, "With --weights q4_0: int8x2 (two-plane ~15-bit), int8 or f32 (default: int8x2)")
      ->check(CLI::IsMember({"int8", "int8x2", "f32"}));
  app->add_option("--kv-type", kv_type, "KV cache element type: f16 (half the memory and bytes per step) or f32 (default: f16)")
      ->check(CLI::IsMember({"f16", "f32"}));
  app->add_option("--device", device, "Compute device: cpu (default) or vulkan[:N] (`ringlm devices` lists them)");
  if (!guided) return;
  app->add_option("--schema-mode", schema_mode,
                  "strict: refuse a schema the grammar cannot enforce exactly, naming the keyword and its JSON "
                  "pointer; lenient: accept it, enforce what the grammar can and report what only the validator "
                  "checks (default: strict)")
      ->check(CLI::IsMember({"strict", "lenient"}));
  app->add_option("--json-style", json_style, "Whitespace of guided JSON: compact or python")
      ->check(CLI::IsMember({"compact", "python"}));
  app->add_option("--grammar-cache-mb", grammar_cache_mb,
                  "Memory bound of the compiled-schema cache, least recently used dropped (default: 512)");
  app->add_option("--grammar-cache-entries", grammar_cache_entries, "Most compiled schemas kept (default: 256)");
  app->add_option("--mask-cache-mb", mask_cache_mb,
                  "Per compiled schema: memory bound of its cached token masks: 32 KiB each, an id list when few tokens are allowed (default: 128)");
}

std::string ModelFlags::model_dir() const {
  if (!hf_repo.empty()) {
    if (hf_model.empty()) {
      const HfModel m = resolve_hf_model(hf_repo);
      hf_model = m.model.string();
      hf_mmproj = m.mmproj.string();
    }
    return hf_model;
  }
  if (!model.empty()) return resolve_model(model);  // a path, or a Hugging Face repo id in the local cache
  const std::string demo = default_model_dir();
  if (demo.empty())
    fail("no --model given, and no cache directory for the built-in demo model (set HOME or XDG_CACHE_HOME, or pass "
         "--model DIR)");
  std::fprintf(stderr,
               "ringlm: no --model given: using the built-in DEMO model (%s): tiny, RANDOM weights, "
               "real Gemma 4 tokenizer; its text is meaningless\n",
               demo.c_str());
  return demo;
}

CLI::Validator thread_count_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        std::size_t used = 0;
        long long n = -1;
        try {
          n = std::stoll(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == value.size() && n >= 0 && n <= 4096) return "";
        return "'" + value + "' is not a thread count (-t is --threads, as in llama.cpp; the sampling temperature is "
               "--temp or --temperature)";
      },
      "THREADS");
}

int ModelFlags::thread_count() const { return threads > 0 ? threads : threads_from_env(); }

model::ModelOptions ModelFlags::model_options() const {
  static bool explained = false;  // once per process
  if (gpu_layers > 0 && !explained) {
    explained = true;
    std::fprintf(stderr,
                 "ringlm: note: -ngl/--n-gpu-layers %d ignored: ringlm does not offload by layers; --device "
                 "vulkan runs the whole model on a GPU (default: cpu)\n",
                 gpu_layers);
  }
  model::ModelOptions o;
  o.threads = thread_count();
  o.weights = weights == "q4_0" ? model::WeightFormat::q4_0 : model::WeightFormat::stored;
  o.activations = activations == "f32"      ? kernels::Q4Activations::f32
                  : activations == "int8x2" ? kernels::Q4Activations::int8x2
                                            : kernels::Q4Activations::int8;
  o.reference_attention = reference_attention_from_env();
  o.packed_weights_in_memory = packed_weights_in_memory_from_env();
  if (device != "cpu" && !opened_device) opened_device = open_compute_device(device);
  o.device = opened_device;
  return o;
}

engine::EngineOptions ModelFlags::engine_options() const {
  engine::EngineOptions o;
  o.model_dir = model_dir();
  o.mmproj = mmproj.empty() ? hf_mmproj : mmproj;  // model_dir() above set hf_mmproj for -hf
  const model::ModelOptions mo = model_options();
  o.context_tokens = ctx;
  o.threads = mo.threads;
  o.weights = mo.weights;
  o.activations = mo.activations;
  o.reference_attention = mo.reference_attention;
  o.packed_weights_in_memory = mo.packed_weights_in_memory;
  o.device = mo.device;
  o.lm_head_subset = lm_head_subset_from_env();
  o.greedy_head = greedy_head_from_env();
  o.kv_type = kv::parse_kv_type(kv_type);
  o.schema_mode = guided::parse_schema_mode(schema_mode);
  o.json_whitespace = json_style == "python" ? guided::Whitespace::kPython : guided::Whitespace::kCompact;
  o.grammar_cache.max_bytes = grammar_cache_mb << 20;
  o.grammar_cache.max_entries = grammar_cache_entries;
  o.grammar_index.mask_cache_bytes = mask_cache_mb << 20;
  return o;
}

void SamplingFlags::add_to(CLI::App* app) {
  app->add_option("--temperature,--temp", temperature, "Sampling temperature (0 = greedy)");
  app->add_option("--top-k", top_k, "Keep the k most likely tokens (0 = off)");
  app->add_option("--top-p", top_p, "Nucleus sampling mass (1 = off)");
  app->add_option("--min-p", min_p, "Drop tokens below min_p times the best probability");
  app->add_option("--repeat-penalty", repeat_penalty, "Repetition penalty (1 = off)");
  app->add_option("--seed", seed, "Random seed (runs with the same seed repeat exactly)");
  app->add_option("--max-tokens,-n,--n-predict", max_tokens, "Most tokens to generate")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return v.empty() || v[0] != '-' ? "" : v + " is not a token count (llama.cpp's -n -1, \"until the end\", is not supported: give the most tokens to generate)";
          },
          ""));
}

engine::GenerationParams SamplingFlags::params() const {
  engine::GenerationParams p;
  p.sampling.temperature = temperature;
  p.sampling.top_k = top_k;
  p.sampling.top_p = top_p;
  p.sampling.min_p = min_p;
  p.sampling.repetition_penalty = repeat_penalty;
  p.sampling.seed = seed;
  p.max_tokens = max_tokens;
  // The rule serve applies to a request (sampling/sampler.h), checked before any model loads;
  // the message names the flag the user typed.
  try {
    sampling::check_sampler_params(p.sampling);
  } catch (const Error& e) {
    const std::string flag = e.param() == "repetition_penalty" ? "--repeat-penalty"
                             : e.param() == "temperature"      ? "--temperature"
                             : e.param() == "top_k"            ? "--top-k"
                             : e.param() == "top_p"            ? "--top-p"
                             : e.param() == "min_p"            ? "--min-p"
                                                               : e.param();
    throw Error(flag + ": " + e.what(), e.kind(), e.param());
  }
  return p;
}

void DraftFlags::add_to(CLI::App* app) {
  app->add_option("--draft", draft,
                  "Speculative decoding: none, ngram (prompt lookup: drafts spans the prompt or reply already "
                  "holds, verified in one batched pass), auto (ngram, paused while its drafts are mostly "
                  "rejected), assistant[:PATH] (the Gemma 4 assistant drafter checkpoint at PATH: a directory or "
                  "a gemma4-assistant .gguf file; without PATH: MODEL/assistant or the sibling MODEL-assistant, "
                  "either + .gguf); the output is identical either way "
                  "(default: none)");
  app->add_option("--draft-max", draft_max, "Most drafted tokens verified per step, 1..16 (default: 4)")
      ->check(CLI::Range(1, engine::kMaxDraftTokens));
}

engine::DraftParams DraftFlags::params() const { return engine::parse_draft(draft, draft_max); }

std::string read_text_file(const std::string& path) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    if (std::cin.bad()) fail("standard input: read error");
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(path, ": read error");
  return ss.str();
}

}  // namespace ringlm::cli

namespace ringlm::cli {

void warn_if_context_cuts(std::size_t prompt_tokens, int max_tokens, std::int64_t context_capacity) {
  static bool warned = false;
  const std::int64_t room = context_capacity - static_cast<std::int64_t>(prompt_tokens);
  if (warned || max_tokens <= room) return;
  warned = true;
  std::fprintf(stderr,
               "ringlm: warning: the context (--ctx %lld tokens) leaves room for %lld new tokens after the %zu-token "
               "prompt, fewer than --max-tokens %d; raise --ctx for longer replies\n",
               static_cast<long long>(context_capacity), static_cast<long long>(std::max<std::int64_t>(room, 0)),
               prompt_tokens, max_tokens);
}

}  // namespace ringlm::cli
