// What one generation request asks for and what it streams back. Shared by the CLI
// (run/chat/extract), the batch job and the HTTP server; the engine implements it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/draft.h"
#include "guided/work_budget.h"
#include "sampling/sampler.h"

namespace ringlm::engine {

// Soft-token rows (image or audio encoder outputs in the text embedding space) for prompt
// indexes; see model::Session::set_embedding_overrides and engine/media_prompt.h.
struct PromptEmbeddings {
  std::vector<std::int64_t> positions;  // indexes into the prompt ids, increasing
  std::vector<float> rows;              // [positions.size()][hidden]
  int hidden = 0;
};

// Checks `media` against a prompt of `prompt_size` tokens and a model of width `hidden`
// (throws ringlm::Error naming what does not fit) and returns its first soft-token index:
// no cached KV may be reused from there on. SIZE_MAX when there are no soft tokens.
std::size_t first_soft_token(const PromptEmbeddings* media, std::size_t prompt_size, int hidden);

struct GenerationParams {
  sampling::SamplerParams sampling;
  int max_tokens = 256;
  std::vector<std::string> stop;   // stop strings (matched on the decoded text, not emitted)
  bool logprobs = false;
  int top_logprobs = 0;            // 0..20
  std::string json_schema;         // JSON Schema text; empty = unconstrained
  bool json_object = false;        // any JSON object (OpenAI response_format json_object)
  // "strict" / "lenient" (guided::SchemaMode); empty = the engine's default (EngineOptions).
  std::string schema_mode;
  // The reply may open with a thought channel (<|channel>...<channel|>, free text) before the
  // guided answer: set with thinking on, so the model thinks unconstrained and the grammar
  // applies from the answer on (guided/reply_grammar.h).
  bool guided_thinking = false;
  // With guided_thinking: at most this many tokens inside the thought channel, after which
  // only <channel|> is allowed (0 = no limit but max_tokens).
  int thinking_budget = 0;
  // JSON array of {"name", "parameters"}: the reply is one or more tool calls
  // (<|tool_call>call:NAME{...}<tool_call|>) to these tools with arguments that follow each
  // one's parameter schema (tool_choice "required" or a named function). Takes precedence
  // over json_schema / json_object.
  std::string tool_schemas;
  bool single_tool_call = false;   // with tool_schemas: exactly one call (parallel_tool_calls: false)
  bool ignore_stop_ids = false;    // keep going past end-of-turn ids (benchmarks with a fixed length)
  guided::WorkBudget mask_budget;  // this request's guided-decoding work limit (0 = unlimited)
  std::shared_ptr<const PromptEmbeddings> prompt_embeddings;  // images/audio in the prompt; null: none
  // Speculative decoding (engine/draft.h); drafting runs in the batch scheduler (it needs
  // BatchSchedulerOptions::draft_max > 0; Generator hands such requests to one); the output
  // is the same either way.
  DraftParams draft;
  // serve: the request's `speculative.n_max` (0..16; 0 = no drafting), applied to the
  // server's --draft by the backend; -1: the server's --draft-max.
  int draft_max_request = -1;
  // An embedding request (serve's /v1/embeddings): the prompt is prefilled from its first
  // token (no cached KV reused, so every token's hidden state is computed) with each token's
  // final-normed hidden state summed, and nothing is generated; GenerationResult::embedding
  // holds their mean. Runs in the batch scheduler only (Generator refuses it).
  bool embedding = false;
};

struct TokenEvent {
  std::int32_t id = -1;
  std::string text;                // UTF-8-complete text delta (may be empty while a char is split)
  float logprob = 0.0f;
  std::vector<sampling::TokenLogprob> top;  // filled when top_logprobs > 0
};

enum class FinishReason { Stop, Length, Cancelled };

inline const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
  }
  return "stop";
}

struct GenerationResult {
  FinishReason finish = FinishReason::Stop;
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;    // prompt tokens whose KV was reused, not recomputed
  int completion_tokens = 0;
  std::string text;                // the whole generated text (stop string excluded)
  int guided_steps = 0;            // sampled steps under a grammar mask
  int subset_head_steps = 0;       // of those, steps that computed only the allowed LM-head rows
  int drafted_tokens = 0;          // speculative decoding: tokens drafted and verified
  int accepted_drafts = 0;         // of those, accepted
  double ttft_s = 0.0;             // time to first token
  double total_s = 0.0;
  // GenerationParams::embedding: the mean over the prompt's tokens of the final-normed hidden
  // state ([hidden_size], not normalized); empty otherwise.
  std::vector<float> embedding;
};

// Which limit ended a reply whose finish is Length: "max_tokens" when it reached the
// request's max_tokens, else "context" (the KV capacity filled first). Front ends name it,
// so a reply cut short is never mistaken for a complete one.
inline const char* length_limit(const GenerationResult& r, int max_tokens) {
  return r.completion_tokens >= max_tokens ? "max_tokens" : "context";
}

// Called once per generated token; return false to cancel the generation. The concatenated
// event texts are a prefix of GenerationResult::text: text held back at the end (an unfinished
// stop-string candidate or UTF-8 sequence) is only in the result.
using TokenCallback = std::function<bool(const TokenEvent&)>;

}  // namespace ringlm::engine
