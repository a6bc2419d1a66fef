// The SSE formats of /v1/chat/completions (chat.completion.chunk) and /v1/completions
// (text_completion chunks): one object per reply of a request, `index` naming its choice.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/backend.h"
#include "server/response.h"
#include "server/stream.h"

namespace ringlm::server {

// With parallel_tool_calls false a reply holds at most one call: later ones are dropped
// (the grammar of tool_choice "required" already allows only one).
void limit_tool_calls(ParsedReply& reply, bool single_call);

struct ChatStreamOptions {
  int index = 0;              // the choice
  bool tools_active = false;  // tools offered and tool_choice not "none"
  bool single_tool_call = false;
  bool logprobs = false;
  bool usage = false;         // stream_options.include_usage
  engine::GenerationParams params;  // what the reply had to follow (for the cut-reply flag)
};

// `thinking`: a splitter when thinking is on and no tools are active; the thought streams as
// delta.reasoning_content chunks, the answer as delta.content chunks.
std::unique_ptr<StreamFormat> make_chat_stream_format(Backend& backend, ResponseIdentity who, ChatStreamOptions options,
                                                      std::unique_ptr<ThoughtSplitter> thinking);

std::unique_ptr<StreamFormat> make_completion_stream_format(Backend& backend, ResponseIdentity who, std::string echo,
                                                            bool logprobs, bool top, bool usage,
                                                            engine::GenerationParams params, int index);

}  // namespace ringlm::server
