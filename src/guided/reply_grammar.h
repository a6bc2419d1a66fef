// Grammars for a whole Gemma 4 reply, not just one JSON value: an optional thought channel
// (`<|channel>thought\n...<channel|>`, free text) before the answer, and tool calls
// (`<|tool_call>call:NAME{arguments}<tool_call|>`) whose arguments follow that tool's
// parameter schema. The special tokens involved have no text bytes, so the guided vocabulary
// (vocabulary_from_tokenizer) gives them one marker byte each, from a range no text token
// produces in guided output (0xF8-0xFF never occur in UTF-8; the byte-fallback tokens for
// those bytes are left out of guided vocabularies).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "guided/grammar.h"

namespace ringlm::guided {

namespace marker {
constexpr uint8_t kToolCallOpen = 0xF9;   // <|tool_call>
constexpr uint8_t kToolCallClose = 0xFA;  // <tool_call|>
constexpr uint8_t kChannelOpen = 0xFB;    // <|channel>
constexpr uint8_t kChannelClose = 0xFC;   // <channel|>
constexpr uint8_t kFirst = 0xF8;          // bytes >= kFirst are markers, never text
}  // namespace marker

// The answer grammar, optionally preceded by one thought channel: `<|channel>`, any text
// (no markers), `<channel|>`. Without `thinking` the answer grammar is returned unchanged.
Grammar with_thought_channel(Grammar answer, bool thinking);

struct ToolGrammar {
  std::string name;    // the function name, written after "call:"
  Grammar arguments;   // its parameter schema, compiled (a JSON object)
};

// One or more tool calls, each `<|tool_call>call:NAME` + arguments + `<tool_call|>` for one of
// `tools`, optionally after a thought channel; the reply may end after any complete call.
// `parallel` false: exactly one call (OpenAI's parallel_tool_calls: false).
Grammar tool_call_grammar(std::vector<ToolGrammar> tools, bool thinking, bool parallel = true);

}  // namespace ringlm::guided
