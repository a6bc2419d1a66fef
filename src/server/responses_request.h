// The OpenAI Responses API request (POST /v1/responses) as the chat request it amounts to.
// The server is stateless: the whole conversation comes in `input` each time (Codex and
// other agents send it so with store: false); `previous_response_id` and item references are
// refused by name. A pure function of the body, so it can be tested without a server.
#pragma once

#include <nlohmann/json.hpp>

namespace ringlm::server {

struct ResponsesRequest {
  // The equivalent /v1/chat/completions body (parse_chat_request validates the rest):
  // instructions as the first system message, input items as messages (function_call items
  // as assistant tool_calls, function_call_output items as tool messages), text.format as
  // response_format, flat function tools as chat tools, max_output_tokens as max_tokens,
  // reasoning.effort as reasoning_effort.
  nlohmann::ordered_json chat_body;
  // The request fields a response object repeats (instructions, tools, text, ...), with
  // OpenAI's defaults where the request left them out.
  nlohmann::ordered_json echo;
};

// Throws ApiError 400 naming the field (`input[2].type`, `tools[0].type`, ...) for what the
// Responses API allows but this server does not do, and for malformed items.
ResponsesRequest translate_responses_request(const nlohmann::ordered_json& body);

}  // namespace ringlm::server
