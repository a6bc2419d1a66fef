// The engine: one loaded model — a Hugging Face directory or a GGUF file — (weights,
// tokenizer, chat template, stop ids) and the compiled-grammar cache (a bounded LRU keyed by
// schema text, see guided/grammar_cache.h), shared by every generation that runs on it.
//
//   engine::Engine engine({.model_dir = dir});
//   engine::Generator gen(engine);                // one KV session; one per concurrent request
//   auto ids = engine.encode_chat(request);
//   gen.generate(ids, params, [](const TokenEvent& e) { fputs(e.text.c_str(), stdout); return true; });
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "chat/chat_template.h"
#include "chat/stop_rules.h"
#include "engine/generation.h"
#include "guided/grammar_cache.h"
#include "guided/matcher.h"
#include "guided/schema_compiler.h"
#include "kernels/q4_weight_matmul.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace ringlm::engine {

struct EngineOptions {
  std::filesystem::path model_dir;
  std::filesystem::path mmproj;  // the towers' llama.cpp mmproj GGUF; empty: model_dir's own
  int context_tokens = 0;  // full-attention KV capacity per session; 0 = model default
  int threads = 0;         // 0 = all cores
  guided::Whitespace json_whitespace = guided::Whitespace::kCompact;  // style of guided JSON
  // The CLI's defaults (--weights q4_0 --activations int8x2); stored: the float reference path.
  model::WeightFormat weights = model::WeightFormat::q4_0;
  kernels::Q4Activations activations = kernels::Q4Activations::int8x2;  // for q4_0 weights
  bool reference_attention = false;  // model::ModelOptions::reference_attention
  bool packed_weights_in_memory = true;  // model::ModelOptions::packed_weights_in_memory
  std::shared_ptr<backend::Device> device;  // model::ModelOptions::device (null: the CPU)
  // When a guided step computes only the allowed rows of the LM head (generator.h); the CLI
  // sets it from RINGLM_LM_HEAD_SUBSET=auto|always|never.
  enum class HeadSubset { Auto, Always, Never } lm_head_subset = HeadSubset::Auto;
  // Batched steps whose rows are all plain greedy run the bounded one-plane LM head
  // (model/greedy_head.h: the same tokens, about half the head's integer work); false keeps
  // the full head (A/B and tests). The CLI sets it from RINGLM_GREEDY_HEAD=on|off.
  bool greedy_head = true;
  kv::KvType kv_type = kv::KvType::f16;  // every session's KV cache element type
  guided::SchemaMode schema_mode = guided::SchemaMode::kStrict;       // when a request names none
  guided::GrammarCacheOptions grammar_cache;  // compiled schemas kept (entries, bytes)
  guided::GrammarIndexOptions grammar_index;  // per schema: token-mask cache bytes
};

class Engine {
 public:
  explicit Engine(const EngineOptions& options);

  const EngineOptions& options() const { return options_; }
  const std::shared_ptr<const model::Model>& model() const { return model_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const chat::StopIds& stop_ids() const { return stop_ids_; }
  // The model directory's chat template, or nullptr if it has none.
  const chat::ChatTemplate* chat_template() const { return chat_template_.get(); }
  double load_seconds() const { return load_seconds_; }

  // Renders a conversation with the chat template; throws ringlm::Error if there is none.
  std::string render_chat(const chat::ChatRequest& request) const;
  // The prompt ids of a conversation: render_chat() (the template writes <bos> itself), no
  // further <bos>; the template's markup becomes control tokens while the request's own
  // strings stay plain text unless `trust_control_tokens` (chat::encode_chat). The one way
  // every command and the server turn a conversation into tokens.
  std::vector<std::int32_t> encode_chat(const chat::ChatRequest& request, bool trust_control_tokens = false) const;
  // Raw text as a prompt (no template): <bos> first when the tokenizer's config asks for it
  // (add_bos_token) and it has one.
  std::vector<std::int32_t> encode_text(std::string_view text) const;

  // The token-level grammar for a JSON Schema (text), compiled once and cached by its text;
  // `any_object` instead gives the grammar of any JSON object. Thread-safe. Throws
  // ringlm::Error naming the schema problem.
  // mode: "strict", "lenient" or empty (EngineOptions::schema_mode). Lenient grammars list what
  // they leave to the validator in GrammarIndex::unenforced().
  std::shared_ptr<guided::GrammarIndex> grammar_for_schema(const std::string& schema_text, const std::string& mode = "");
  std::shared_ptr<guided::GrammarIndex> grammar_for_any_object();
  // The grammar a request asks for (json_schema / json_object / tool_schemas, with
  // guided_thinking and schema_mode), compiled once and cached; null when it asks for none.
  std::shared_ptr<guided::GrammarIndex> grammar_for(const GenerationParams& params);
  guided::GrammarCacheStats grammar_cache_stats() const { return grammars_.stats(); }

 private:
  EngineOptions options_;
  std::chrono::steady_clock::time_point load_start_;
  Tokenizer tokenizer_;
  std::shared_ptr<const model::Model> model_;
  chat::StopIds stop_ids_;
  std::unique_ptr<chat::ChatTemplate> chat_template_;
  double load_seconds_ = 0.0;

  std::mutex grammar_mu_;  // guards vocabulary_
  std::shared_ptr<const guided::Vocabulary> vocabulary_;  // built on first use
  guided::GrammarCache grammars_;
  std::shared_ptr<const guided::Vocabulary> grammar_vocabulary();
};

}  // namespace ringlm::engine
