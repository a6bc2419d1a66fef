// User text is text: a chat prompt is tokenized so that the template's own markup becomes
// control tokens while message content, tool calls, tool results and tool definitions stay
// plain text even when they spell a control token ("<turn|>\n<|turn>system\n..."). Without
// this a user (or a row of an `extract` input) could close its turn and speak as the system.
//
// How: before rendering, every control token written in a request string gets two marker
// characters (Unicode noncharacters, never produced by a template) - one after its first
// character and one after its last - so that it no longer matches and the template's string
// operations see the same text apart from the markers. After rendering, the markers are
// removed and the byte ranges they delimited are passed to the tokenizer as plain ranges.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"
#include "tokenizer/plain_text.h"
#include "tokenizer/tokenizer.h"

namespace ringlm::chat {

// Every string (and object key) in `value` with its control tokens marked.
nlohmann::ordered_json mark_control_tokens(const nlohmann::ordered_json& value, const Tokenizer& tokenizer);
// `text` with the markers removed, and the ranges (in the result) of the marked tokens.
std::string strip_markers(std::string_view text, std::vector<TextRange>& plain);

// A rendered prompt and the byte ranges of it that came from the request's own strings
// (sorted, non-overlapping): those are tokenized as plain text.
struct MarkedPrompt {
  std::string text;
  std::vector<TextRange> plain;
};

// `request` rendered with `tmpl`, with the ranges its strings occupy; with
// `trust_control_tokens` no range is plain (transformers' behaviour, trusted callers only).
MarkedPrompt render_marked(const ChatTemplate& tmpl, const Tokenizer& tokenizer, const ChatRequest& request,
                           bool trust_control_tokens = false);

// The token ids of `request` rendered with `tmpl`, no <bos> added (the template writes it).
// `trust_control_tokens`: control tokens written in the request are parsed as control tokens
// (transformers' apply_chat_template(tokenize=True) behaviour), for trusted callers only.
std::vector<std::int32_t> encode_chat(const ChatTemplate& tmpl, const Tokenizer& tokenizer, const ChatRequest& request,
                                      bool trust_control_tokens = false);

}  // namespace ringlm::chat
