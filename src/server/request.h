// Parsing and validation of OpenAI request bodies (/v1/chat/completions, /v1/completions) into
// generation parameters. Pure functions of the body text, so they can be fuzzed without a model.
// Unknown fields are ignored; a known field of the wrong type or out of range throws ApiError
// 400 naming the field.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/generation.h"
#include "server/media.h"

namespace ringlm::server {

struct SamplingRequest {
  engine::GenerationParams params;   // max_tokens is filled in later from the prompt length
  std::optional<int> max_tokens;     // what the client asked for, if anything
  bool seed_given = false;
  bool stream = false;
  bool include_usage = false;        // stream_options.include_usage
  std::string model;
  int n = 1;                         // choices to generate (1..kMaxChoices), each its own job
};

// The most choices (`n`) one request may ask for: each is a generation of its own.
constexpr int kMaxChoices = 16;

struct ChatRequest : SamplingRequest {
  nlohmann::ordered_json messages;           // normalised (see Backend::render_chat)
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  std::string tool_choice = "auto";  // auto | none | required
  std::optional<bool> schema_in_prompt;  // ringlm extension; unset: the server's --schema-in-prompt
  std::vector<MediaRef> media;       // images of the content parts, in prompt order (content_parts.h)
  // chat_template_kwargs.enable_thinking (vLLM/SGLang) or a top-level enable_thinking: the
  // template asks the model to think, a schema / tool grammar applies after the thought
  // channel (params.guided_thinking), and the reply's thought is returned as reasoning_content.
  bool enable_thinking = false;
  // parallel_tool_calls: false - at most one tool call in a reply (the grammar of tool_choice
  // "required" allows only one; in "auto" mode calls after the first are dropped).
  bool single_tool_call = false;
};

struct CompletionRequest : SamplingRequest {
  std::string prompt;
  bool echo = false;
};

// Maximum JSON nesting accepted in a body; deeper bodies are rejected before parsing.
constexpr int kMaxJsonDepth = 64;

// Parses a body into JSON (400 for malformed JSON, a non-object body or nesting too deep).
nlohmann::ordered_json parse_body(std::string_view body);

ChatRequest parse_chat_request(const nlohmann::ordered_json& body);
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body);

}  // namespace ringlm::server
