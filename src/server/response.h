// Builders for the OpenAI response objects (chat.completion, chat.completion.chunk,
// text_completion) and their logprobs, usage and error bodies. Output is serialised with
// invalid UTF-8 replaced (a token may be part of a character), never with an exception.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/generation.h"
#include "server/backend.h"

namespace ringlm::server {

// What every object of one response shares.
struct ResponseIdentity {
  std::string id;       // chatcmpl-... / cmpl-...
  std::int64_t created; // unix seconds
  std::string model;
};

std::string new_id(const char* prefix);  // prefix + 24 random alphanumerics
std::string dump_json(const nlohmann::ordered_json& j);  // compact, invalid UTF-8 replaced

nlohmann::ordered_json usage_json(const engine::GenerationResult& r);

// Chat logprobs: {"content":[{token, logprob, bytes, top_logprobs:[...]}, ...]}
nlohmann::ordered_json chat_logprob_entry(Backend& backend, const engine::TokenEvent& ev);
// Completions logprobs: {tokens, token_logprobs, top_logprobs, text_offset}
nlohmann::ordered_json completion_logprobs(Backend& backend, const std::vector<engine::TokenEvent>& events,
                                   std::size_t text_offset, bool with_top);

// Assistant message with OpenAI tool calls (ids generated, arguments as JSON text).
nlohmann::ordered_json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index);

nlohmann::ordered_json chat_completion(const ResponseIdentity& who, nlohmann::ordered_json message, const char* finish_reason,
                               nlohmann::ordered_json logprobs, const engine::GenerationResult& r);
nlohmann::ordered_json chat_chunk(const ResponseIdentity& who, nlohmann::ordered_json delta, const char* finish_reason,
                          nlohmann::ordered_json logprobs = nullptr, int index = 0);
nlohmann::ordered_json text_completion(const ResponseIdentity& who, const std::string& text, const char* finish_reason,
                               nlohmann::ordered_json logprobs, const engine::GenerationResult& r);
nlohmann::ordered_json completion_chunk(const ResponseIdentity& who, const std::string& text, const char* finish_reason,
                                nlohmann::ordered_json logprobs = nullptr, int index = 0);
// A reply that had to follow a grammar (response_format json_schema / json_object, or forced
// tool calls) but was cut by a limit before it was complete does not match what was asked
// for: this is the `error` object its choice carries then (docs/server.md "Cut replies");
// null for any other reply.
nlohmann::ordered_json truncation_error(const engine::GenerationParams& params, const engine::GenerationResult& r);

nlohmann::ordered_json usage_chunk(const ResponseIdentity& who, const char* object, const engine::GenerationResult& r);

// "data: <json>\n\n"
std::string sse_event(const nlohmann::ordered_json& j);

}  // namespace ringlm::server
