// POST /v1/responses: the OpenAI Responses API over the chat pipeline, stateless. The request
// becomes a chat request (responses_request.h); the reply becomes output items - a
// "reasoning" item for the thought (thinking on), a "message" item with one output_text
// part, a "function_call" item per tool call - built by one ResponseBuilder whether streamed
// or not. Streamed, it sends the Responses event sequence (response.created,
// response.in_progress, response.output_item.added, response.content_part.added,
// response.output_text.delta, ... response.completed), each as `event: TYPE` + `data: {...}`
// with a sequence_number; there is no [DONE]. A reply cut by a limit is status "incomplete"
// with incomplete_details.reason "max_output_tokens" (its JSON may be cut short).
#include <httplib.h>

#include <ctime>
#include <utility>

#include "server/access.h"
#include "server/api_error.h"
#include "server/client_socket.h"
#include "server/http_server.h"
#include "server/request.h"
#include "server/response.h"
#include "server/responses_request.h"
#include "server/stream.h"
#include "server/stream_formats.h"

namespace ringlm::server {

using engine::FinishReason;
using engine::GenerationResult;
using engine::TokenEvent;
using json = nlohmann::ordered_json;

namespace {

// Builds a response's output items from its reply, piece by piece, and the events that say
// so (kept only when streaming).
class ResponseBuilder {
 public:
  ResponseBuilder(json base, bool streaming) : response_(std::move(base)), streaming_(streaming) {}

  std::string created() {
    json r = snapshot("in_progress");
    std::string out = event("response.created", {{"response", r}});
    return out + event("response.in_progress", {{"response", std::move(r)}});
  }

  void reasoning(const std::string& text) { append("reasoning", text); }
  void content(const std::string& text) { append("message", text); }

  void function_call(const ToolCall& call) {
    close_item();
    const std::size_t index = output_.size();
    json item = {{"id", new_id("fc_")}, {"type", "function_call"}, {"status", "in_progress"},
                 {"arguments", ""},     {"call_id", new_id("call_")}, {"name", call.name}};
    const std::string args = dump_json(call.arguments);
    const std::string id = item["id"];
    event("response.output_item.added", {{"output_index", index}, {"item", item}});
    event("response.function_call_arguments.delta", {{"item_id", id}, {"output_index", index}, {"delta", args}});
    event("response.function_call_arguments.done", {{"item_id", id}, {"output_index", index}, {"arguments", args}});
    item["arguments"] = args;
    item["status"] = "completed";
    event("response.output_item.done", {{"output_index", index}, {"item", item}});
    output_.push_back(std::move(item));
  }

  // The reply is over: the open item is closed (an empty message if there was nothing at all).
  void finish(const GenerationResult& r) {
    incomplete_ = r.finish == FinishReason::Length;
    if (output_.empty() && open_.empty()) append("message", "");
    close_item();
  }

  json response(const GenerationResult& total, int reasoning_tokens) {
    json r = snapshot(incomplete_ ? "incomplete" : "completed");
    if (incomplete_) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
    r["usage"] = {{"input_tokens", total.prompt_tokens},
                  {"input_tokens_details", {{"cached_tokens", total.cached_prompt_tokens}}},
                  {"output_tokens", total.completion_tokens},
                  {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens}}},
                  {"total_tokens", total.prompt_tokens + total.completion_tokens}};
    return r;
  }

  std::string completed(const GenerationResult& total, int reasoning_tokens) {
    return event(incomplete_ ? "response.incomplete" : "response.completed", {{"response", response(total, reasoning_tokens)}});
  }

  const std::string& reasoning_text() const { return reasoning_; }

  // Events since the last call.
  std::string take() { return std::exchange(pending_, std::string()); }

  std::string event(const char* type, json fields) {
    json e = {{"type", type}, {"sequence_number", sequence_++}};
    e.update(fields);
    std::string text = std::string("event: ") + type + "\ndata: " + dump_json(e) + "\n\n";
    if (streaming_) pending_ += text;
    return text;
  }

 private:
  json snapshot(const char* status) {
    json r = response_;
    r["status"] = status;
    r["output"] = output_;
    return r;
  }

  // Text for an item of `kind` ("message" or "reasoning"), opening it if another is open.
  void append(const char* kind, const std::string& text) {
    if (open_ != kind) {
      close_item();
      open_ = kind;
      item_id_ = new_id(open_ == "message" ? "msg_" : "rs_");
      text_.clear();
      event("response.output_item.added", {{"output_index", output_.size()}, {"item", open_item("in_progress", false)}});
      event("response.content_part.added",
            {{"item_id", item_id_}, {"output_index", output_.size()}, {"content_index", 0}, {"part", part("")}});
    }
    if (text.empty()) return;
    text_ += text;
    if (open_ == "reasoning") reasoning_ += text;
    event(open_ == "message" ? "response.output_text.delta" : "response.reasoning_text.delta",
          {{"item_id", item_id_}, {"output_index", output_.size()}, {"content_index", 0}, {"delta", text}});
  }

  json part(const std::string& text) const {
    if (open_ == "message") return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
    return {{"type", "reasoning_text"}, {"text", text}};
  }

  json open_item(const char* status, bool with_text) const {
    json content = with_text ? json::array({part(text_)}) : json::array();
    if (open_ == "message")
      return {{"id", item_id_}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
    return {{"id", item_id_}, {"type", "reasoning"}, {"summary", json::array()}, {"content", std::move(content)}};
  }

  void close_item() {
    if (open_.empty()) return;
    const std::size_t index = output_.size();
    event(open_ == "message" ? "response.output_text.done" : "response.reasoning_text.done",
          {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"text", text_}});
    event("response.content_part.done", {{"item_id", item_id_}, {"output_index", index}, {"content_index", 0}, {"part", part(text_)}});
    json item = open_item(incomplete_ ? "incomplete" : "completed", true);
    event("response.output_item.done", {{"output_index", index}, {"item", item}});
    output_.push_back(std::move(item));
    open_.clear();
  }

  json response_;
  bool streaming_;
  json output_ = json::array();
  std::string open_;  // kind of the open item, "" when none
  std::string item_id_, text_, pending_;
  std::string reasoning_;  // all thought text
  int sequence_ = 0;
  bool incomplete_ = false;
};

// Where a reply's text goes: thought to the reasoning item, answer to the message item;
// tool calls (when tools are on) parsed from the whole reply at its end.
class ResponsesStreamFormat : public StreamFormat {
 public:
  ResponsesStreamFormat(Backend& backend, json base, bool streaming, bool tools_active, bool single_call,
                        std::unique_ptr<ThoughtSplitter> thinking)
      : backend_(backend), builder_(std::move(base), streaming), tools_(tools_active), single_(single_call),
        thinking_(std::move(thinking)) {}

  std::string begin() override {
    builder_.created();
    return builder_.take();
  }

  std::string tokens(const std::vector<TokenEvent>& events) override {
    if (tools_) return "";  // held until the reply is complete: it may be a call
    const std::string text = join_text(events);
    streamed_ += text;
    feed(text);
    return builder_.take();
  }

  std::string end(const GenerationResult& r) override {
    if (tools_) {
      ParsedReply parsed = backend_.parse_reply(r.text);
      limit_tool_calls(parsed, single_);
      if (!parsed.reasoning.empty()) builder_.reasoning(parsed.reasoning);
      if (!parsed.content.empty()) builder_.content(parsed.content);
      for (const auto& call : parsed.tool_calls) builder_.function_call(call);
    } else {
      // Text the engine delivered only in its result (a held-back stop-string prefix).
      if (r.text.size() > streamed_.size() && r.text.compare(0, streamed_.size(), streamed_) == 0)
        feed(r.text.substr(streamed_.size()));
      if (thinking_) {
        ThoughtSplitter::Delta d;
        thinking_->finish(d);
        deliver(d);
      }
    }
    builder_.finish(r);
    return builder_.take();
  }

  std::string close(const GenerationResult& total) override {
    builder_.completed(total, reasoning_tokens());
    return builder_.take();
  }

  std::string failure(const std::string& error_json) override {
    json e = json::parse(error_json, nullptr, false);
    json err = e.is_object() && e.contains("error") ? e["error"] : json::object();
    builder_.event("error", {{"code", err.value("code", json())}, {"message", err.value("message", json("generation failed"))},
                             {"param", err.value("param", json())}});
    return builder_.take();
  }

  json response(const GenerationResult& total) { return builder_.response(total, reasoning_tokens()); }

 private:
  // The thought's length in tokens (its text re-tokenized: the reply's ids are not split).
  int reasoning_tokens() {
    const std::string& t = builder_.reasoning_text();
    return t.empty() ? 0 : static_cast<int>(backend_.tokenize_text(t, false, false).size());
  }

  void feed(const std::string& text) {
    if (!thinking_) return builder_.content(text);
    ThoughtSplitter::Delta d;
    thinking_->push(text, d);
    deliver(d);
  }
  void deliver(const ThoughtSplitter::Delta& d) {
    if (!d.reasoning.empty()) builder_.reasoning(d.reasoning);
    if (!d.content.empty()) builder_.content(d.content);
  }

  Backend& backend_;
  ResponseBuilder builder_;
  bool tools_, single_;
  std::unique_ptr<ThoughtSplitter> thinking_;
  std::string streamed_;
};

}  // namespace

void HttpServer::handle_responses(const httplib::Request& req, httplib::Response& res) {
  const auto started = std::chrono::steady_clock::now();
  if (scheduler_->draining()) throw ApiError(503, "server is shutting down", "", "shutting_down");
  const ResponsesRequest rr = translate_responses_request(parse_body(req.body));
  ChatRequest cr = parse_chat_request(rr.chat_body);
  Scheduler::Reservation place;
  std::vector<std::int32_t> prompt = chat_prompt(cr, res, place);
  const bool tools_active = !cr.tools.empty() && cr.tool_choice != "none";

  json base = {{"id", new_id("resp_")}, {"object", "response"}, {"created_at", static_cast<std::int64_t>(std::time(nullptr))},
               {"status", "in_progress"}, {"error", nullptr}, {"incomplete_details", nullptr}, {"model", backend_.model_id()},
               {"output", json::array()}};
  base.update(rr.echo);
  auto format = std::make_unique<ResponsesStreamFormat>(backend_, std::move(base), cr.stream, tools_active,
                                                        cr.single_tool_call,
                                                        cr.enable_thinking && !tools_active ? backend_.thought_splitter() : nullptr);
  auto jobs = submit_jobs(prompt, cr.params, 1, std::move(place));
  const int fd = find_connection_fd(req.local_addr, req.local_port, req.remote_addr, req.remote_port);

  if (cr.stream) {
    auto st = std::make_shared<Stream>();
    st->jobs = jobs;
    st->formats.push_back(std::move(format));
    st->fd = fd;
    st->started = started;
    serve_stream(res, st, open_streams_, metrics_);
    return;
  }
  Job& job = *jobs[0];
  if (!await_job(job, fd, nullptr)) {
    res.status = 499;
    return;
  }
  if (job_failed(job)) throw_job_error(job);
  const GenerationResult& r = job.result();
  access_tokens(r.prompt_tokens, r.completion_tokens);
  // The same builder as a stream, its events dropped: one description of the output items.
  format->begin();
  format->end(r);
  res.set_content(dump_json(format->response(r)), "application/json");
  metrics_.observe_request_duration(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

}  // namespace ringlm::server
