// Parsing of Gemma 4 replies (text decoded with special tokens kept): thinking
// (`<|channel>thought\n...<channel|>`) is separated from the answer, and tool calls
// (`<|tool_call>call:NAME{key:value,...}<tool_call|>`) become a name plus JSON arguments.
//
// The argument syntax is the inverse of the chat template's `format_argument`: strings are
// quoted with `<|"|>` (no escapes inside), mapping keys are bare (or `<|"|>`-quoted), and
// numbers, true, false and null are written as in JSON. The parser also accepts plain JSON
// strings and quoted keys, which models sometimes produce.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ringlm::chat {

struct ToolCall {
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();
};

struct GemmaReply {
  std::string content;   // the answer, thinking and tool calls removed, trimmed
  std::string thinking;  // text of the thought channel(s), trimmed; "" if none
  std::vector<ToolCall> tool_calls;
};

// Parses a whole reply. A tool call whose body does not parse is kept in `content` verbatim.
GemmaReply parse_gemma_reply(std::string_view text);

// Parses one argument value (`{a:<|"|>x<|"|>,b:[1,true]}`); throws ringlm::Error naming the
// byte offset on malformed input.
nlohmann::ordered_json parse_gemma_value(std::string_view text);

// Incremental version for streaming: push decoded text pieces as they arrive; events come
// out as soon as they are certain (text that might be the start of a marker is held back).
class GemmaReplyStream {
 public:
  struct Event {
    enum class Kind { Content, Thinking, ToolCall } kind;
    std::string text;    // Content / Thinking delta; for an unparsable tool call, its raw text as Content
    ToolCall tool_call;  // Kind::ToolCall
  };

  // tool_calls false: `<|tool_call>` is not a marker (the reply's tool-call text stays content,
  // verbatim); only thought channels are split off. For replies to requests without tools.
  explicit GemmaReplyStream(bool tool_calls = true) : tool_calls_(tool_calls) {}

  void push(std::string_view piece, std::vector<Event>& events);
  // End of the reply: releases held-back text (an unterminated tool call becomes content,
  // an unterminated thought stays thinking).
  void finish(std::vector<Event>& events);

 private:
  enum class State { Content, ChannelName, Thinking, ToolCall };
  void emit(Event::Kind kind, std::string_view text, std::vector<Event>& events);
  void finish_tool_call(std::vector<Event>& events);

  bool tool_calls_ = true;
  State state_ = State::Content;
  std::string buffer_;     // unprocessed text (may end with a partial marker)
  std::string tool_body_;  // text of the tool call being read
};

}  // namespace ringlm::chat
