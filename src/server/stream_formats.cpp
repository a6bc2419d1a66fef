#include "server/stream_formats.h"

namespace ringlm::server {

using engine::GenerationResult;
using engine::TokenEvent;
using json = nlohmann::ordered_json;

void limit_tool_calls(ParsedReply& reply, bool single_call) {
  if (single_call && reply.tool_calls.size() > 1) reply.tool_calls.resize(1);
}

namespace {

class ChatStreamFormat : public StreamFormat {
 public:
  ChatStreamFormat(Backend& b, ResponseIdentity who, ChatStreamOptions o, std::unique_ptr<ThoughtSplitter> thinking)
      : backend_(b), who_(std::move(who)), o_(std::move(o)), thinking_(std::move(thinking)) {}

  std::string begin() override { return chunk({{"role", "assistant"}, {"content", ""}}); }

  std::string tokens(const std::vector<TokenEvent>& events) override {
    if (o_.tools_active) {  // a reply may turn out to be a tool call: hold it until it is complete
      if (o_.logprobs) held_.insert(held_.end(), events.begin(), events.end());
      return "";
    }
    std::string text = join_text(events);
    if (text.empty() && !o_.logprobs) return "";
    streamed_ += text;
    if (thinking_) {
      ThoughtSplitter::Delta d;
      thinking_->push(text, d);
      return delta_chunks(d, logprobs_for(events));
    }
    return chunk({{"content", text}}, logprobs_for(events));
  }

  std::string end(const GenerationResult& r) override {
    std::string out;
    const char* finish = engine::finish_reason_name(r.finish);
    if (o_.tools_active) {
      ParsedReply parsed = backend_.parse_reply(r.text);
      limit_tool_calls(parsed, o_.single_tool_call);
      if (!parsed.reasoning.empty()) out += chunk({{"reasoning_content", parsed.reasoning}});
      if (!parsed.content.empty() || o_.logprobs) out += chunk({{"content", parsed.content}}, logprobs_for(held_));
      if (!parsed.tool_calls.empty()) {
        out += chunk({{"tool_calls", tool_calls_json(parsed.tool_calls, true)}});
        // A reply cut by a limit says so, even when a call before the cut was complete.
        if (r.finish != engine::FinishReason::Length) finish = "tool_calls";
      }
    } else if (thinking_) {
      ThoughtSplitter::Delta d;
      if (r.text.size() > streamed_.size() && r.text.compare(0, streamed_.size(), streamed_) == 0)
        thinking_->push(std::string_view(r.text).substr(streamed_.size()), d);
      thinking_->finish(d);  // what the splitter held back (a partial marker)
      out += delta_chunks(d, nullptr);
    } else if (r.text.size() > streamed_.size() && r.text.compare(0, streamed_.size(), streamed_) == 0) {
      // Text the engine held back (a stop-string prefix that never completed) and delivered
      // only in its result.
      out += chunk({{"content", r.text.substr(streamed_.size())}});
    }
    json last = chat_chunk(who_, json::object(), finish, nullptr, o_.index);
    if (json err = truncation_error(o_.params, r); !err.is_null()) last["choices"][0]["error"] = std::move(err);
    return out + sse_event(last);
  }

  std::string close(const GenerationResult& total) override {
    return (o_.usage ? sse_event(usage_chunk(who_, "chat.completion.chunk", total)) : std::string()) + "data: [DONE]\n\n";
  }

 private:
  std::string chunk(json delta, json logprobs = nullptr) {
    return sse_event(chat_chunk(who_, std::move(delta), nullptr, std::move(logprobs), o_.index));
  }

  json logprobs_for(const std::vector<TokenEvent>& events) {
    if (!o_.logprobs) return nullptr;
    json content = json::array();
    for (const auto& ev : events) content.push_back(chat_logprob_entry(backend_, ev));
    return {{"content", std::move(content)}};
  }

  // A reasoning_content chunk for the thought text, then a content chunk for the answer text
  // (sent also when empty if it carries logprobs); the logprobs go on the last chunk.
  std::string delta_chunks(const ThoughtSplitter::Delta& d, json lp) {
    std::string out;
    const bool content = !d.content.empty() || (d.reasoning.empty() && !lp.is_null());
    if (!d.reasoning.empty()) out += chunk({{"reasoning_content", d.reasoning}}, content ? json(nullptr) : lp);
    if (content) out += chunk({{"content", d.content}}, lp);
    return out;
  }

  Backend& backend_;
  ResponseIdentity who_;
  ChatStreamOptions o_;
  std::unique_ptr<ThoughtSplitter> thinking_;
  std::string streamed_;
  std::vector<TokenEvent> held_;
};

class CompletionStreamFormat : public StreamFormat {
 public:
  CompletionStreamFormat(Backend& b, ResponseIdentity who, std::string echo, bool logprobs, bool top, bool usage,
                         engine::GenerationParams params, int index)
      : backend_(b), who_(std::move(who)), echo_(std::move(echo)), logprobs_(logprobs), top_(top), usage_(usage),
        params_(std::move(params)), index_(index) {}

  std::string begin() override {
    offset_ = echo_.size();
    return echo_.empty() ? "" : sse_event(completion_chunk(who_, echo_, nullptr, nullptr, index_));
  }

  std::string tokens(const std::vector<TokenEvent>& events) override {
    std::string text = join_text(events);
    if (text.empty() && !logprobs_) return "";
    json lp = logprobs_ ? completion_logprobs(backend_, events, offset_, top_) : json(nullptr);
    offset_ += text.size();
    streamed_ += text;
    return sse_event(completion_chunk(who_, text, nullptr, std::move(lp), index_));
  }

  std::string end(const GenerationResult& r) override {
    std::string out;
    if (r.text.size() > streamed_.size() && r.text.compare(0, streamed_.size(), streamed_) == 0) {
      out += sse_event(completion_chunk(who_, r.text.substr(streamed_.size()), nullptr, nullptr, index_));
    }
    json last = completion_chunk(who_, "", engine::finish_reason_name(r.finish), nullptr, index_);
    if (json err = truncation_error(params_, r); !err.is_null()) last["choices"][0]["error"] = std::move(err);
    return out + sse_event(last);
  }

  std::string close(const GenerationResult& total) override {
    return (usage_ ? sse_event(usage_chunk(who_, "text_completion", total)) : std::string()) + "data: [DONE]\n\n";
  }

 private:
  Backend& backend_;
  ResponseIdentity who_;
  std::string echo_;
  bool logprobs_, top_, usage_;
  engine::GenerationParams params_;
  int index_;
  std::size_t offset_ = 0;
  std::string streamed_;
};

}  // namespace

std::unique_ptr<StreamFormat> make_chat_stream_format(Backend& backend, ResponseIdentity who, ChatStreamOptions options,
                                                      std::unique_ptr<ThoughtSplitter> thinking) {
  return std::make_unique<ChatStreamFormat>(backend, std::move(who), std::move(options), std::move(thinking));
}

std::unique_ptr<StreamFormat> make_completion_stream_format(Backend& backend, ResponseIdentity who, std::string echo,
                                                            bool logprobs, bool top, bool usage,
                                                            engine::GenerationParams params, int index) {
  return std::make_unique<CompletionStreamFormat>(backend, std::move(who), std::move(echo), logprobs, top, usage,
                                                  std::move(params), index);
}

}  // namespace ringlm::server
