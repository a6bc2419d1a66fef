#include "server/http_server.h"

#include <httplib.h>

#include <sys/socket.h>

#include <cstdio>
#include <ctime>

#include "server/access.h"
#include "server/browser_guard.h"
#include "server/local_media.h"
#include "server/api_error.h"
#include "server/client_socket.h"
#include "server/connection_guard.h"
#include "server/request.h"
#include "server/response.h"
#include "server/web_ui.h"
#include "util/error.h"

namespace ringlm::server {

using engine::FinishReason;
using engine::GenerationResult;
using engine::TokenEvent;
using json = nlohmann::ordered_json;  // keys keep the order they were given in (schemas, tool arguments)
using Clock = std::chrono::steady_clock;

namespace {

// How often a waiting request thread looks at its client's socket.
constexpr auto kPollInterval = std::chrono::milliseconds(50);

struct Route {
  const char* path;
  const char* method;
};
constexpr Route kRoutes[] = {{"/v1/chat/completions", "POST"},
                             {"/v1/completions", "POST"},
                             {"/v1/models", "GET"},
                             {"/health", "GET"},
                             {"/metrics", "GET"}};

constexpr Route kModelRoute = {"/v1/models/{id}", "GET"};
constexpr std::string_view kModelPrefix = "/v1/models/";

const Route* find_route(const std::string& path) {
  for (const auto& r : kRoutes) if (path == r.path) return &r;
  if (path.size() > kModelPrefix.size() && path.compare(0, kModelPrefix.size(), kModelPrefix) == 0) return &kModelRoute;
  return nullptr;
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  if (e.status() == 429) res.set_header("Retry-After", "1");
  res.set_content(dump_json(e.to_json()), "application/json");
}

int connection_fd(const httplib::Request& req) {
  return find_connection_fd(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
}

// The status a failed or cancelled job maps to; throws the ApiError for it.
[[noreturn]] void throw_job_error(const Job& job) {
  if (job.error_status() != 0)
    throw ApiError(job.error_status(), job.error_message(), job.error_param(), job.error_code());
  throw ApiError(503, "server is shutting down; the generation was cancelled", "", "shutting_down");
}

// Waits for a non-streaming job, cancelling it if the client disconnects meanwhile. Keeps the
// token events when `keep` is given. Returns false if the client went away.
bool await_job(Job& job, int fd, std::vector<TokenEvent>* keep) {
  std::vector<TokenEvent> batch;
  bool client_here = true;
  for (;;) {
    const bool done = job.take_events(batch, kPollInterval);
    if (keep) keep->insert(keep->end(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
    if (done) return client_here;
    if (client_here && peer_closed(fd)) {
      client_here = false;
      job.cancel();  // the worker stops at its next token; keep waiting for it to let go
    }
  }
}

std::string join_text(const std::vector<TokenEvent>& events) {
  std::string s;
  for (const auto& ev : events) s += ev.text;
  return s;
}

// Turns one response's token events into SSE text; one subclass per endpoint.
class StreamFormat {
 public:
  virtual ~StreamFormat() = default;
  virtual std::string begin() = 0;
  virtual std::string tokens(const std::vector<TokenEvent>& events) = 0;
  virtual std::string end(const GenerationResult& r) = 0;
};

class ChatStreamFormat : public StreamFormat {
 public:
  // `thinking`: a splitter when thinking is on and no tools are active; the thought streams
  // as delta.reasoning_content chunks, the answer as delta.content chunks.
  ChatStreamFormat(Backend& b, ResponseIdentity who, bool tools_active, bool logprobs, bool usage,
                   std::unique_ptr<ThoughtSplitter> thinking)
      : backend_(b), who_(std::move(who)), tools_(tools_active), logprobs_(logprobs), usage_(usage),
        thinking_(std::move(thinking)) {}

  std::string begin() override { return sse_event(chat_chunk(who_, {{"role", "assistant"}, {"content", ""}}, nullptr)); }

  std::string tokens(const std::vector<TokenEvent>& events) override {
    if (tools_) {  // a reply may turn out to be a tool call: hold it until it is complete
      if (logprobs_) held_.insert(held_.end(), events.begin(), events.end());
      return "";
    }
    std::string text = join_text(events);
    if (text.empty() && !logprobs_) return "";
    streamed_ += text;
    if (thinking_) {
      ThoughtSplitter::Delta d;
      thinking_->push(text, d);
      return delta_chunks(d, logprobs_for(events));
    }
    return sse_event(chat_chunk(who_, {{"content", text}}, nullptr, logprobs_for(events)));
  }

  std::string end(const GenerationResult& r) override {
    std::string out;
    const char* finish = engine::finish_reason_name(r.finish);
    if (tools_) {
      ParsedReply parsed = backend_.parse_reply(r.text);
      if (!parsed.reasoning.empty()) out += sse_event(chat_chunk(who_, {{"reasoning_content", parsed.reasoning}}, nullptr));
      if (!parsed.content.empty() || logprobs_) {
        out += sse_event(chat_chunk(who_, {{"content", parsed.content}}, nullptr, logprobs_for(held_)));
      }
      if (!parsed.tool_calls.empty()) {
        out += sse_event(chat_chunk(who_, {{"tool_calls", tool_calls_json(parsed.tool_calls, true)}}, nullptr));
        finish = "tool_calls";
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
      out += sse_event(chat_chunk(who_, {{"content", r.text.substr(streamed_.size())}}, nullptr));
    }
    out += sse_event(chat_chunk(who_, json::object(), finish));
    if (usage_) out += sse_event(usage_chunk(who_, "chat.completion.chunk", r));
    return out;
  }

 private:
  json logprobs_for(const std::vector<TokenEvent>& events) {
    if (!logprobs_) return nullptr;
    json content = json::array();
    for (const auto& ev : events) content.push_back(chat_logprob_entry(backend_, ev));
    return {{"content", std::move(content)}};
  }

  // A reasoning_content chunk for the thought text, then a content chunk for the answer text
  // (sent also when empty if it carries logprobs); the logprobs go on the last chunk.
  std::string delta_chunks(const ThoughtSplitter::Delta& d, json lp) {
    std::string out;
    const bool content = !d.content.empty() || (d.reasoning.empty() && !lp.is_null());
    if (!d.reasoning.empty())
      out += sse_event(chat_chunk(who_, {{"reasoning_content", d.reasoning}}, nullptr, content ? json(nullptr) : lp));
    if (content) out += sse_event(chat_chunk(who_, {{"content", d.content}}, nullptr, lp));
    return out;
  }

  Backend& backend_;
  ResponseIdentity who_;
  bool tools_, logprobs_, usage_;
  std::unique_ptr<ThoughtSplitter> thinking_;
  std::string streamed_;
  std::vector<TokenEvent> held_;
};

class CompletionStreamFormat : public StreamFormat {
 public:
  CompletionStreamFormat(Backend& b, ResponseIdentity who, std::string echo, bool logprobs, bool top, bool usage)
      : backend_(b), who_(std::move(who)), echo_(std::move(echo)), logprobs_(logprobs), top_(top), usage_(usage) {}

  std::string begin() override {
    offset_ = echo_.size();
    return echo_.empty() ? "" : sse_event(completion_chunk(who_, echo_, nullptr));
  }

  std::string tokens(const std::vector<TokenEvent>& events) override {
    std::string text = join_text(events);
    if (text.empty() && !logprobs_) return "";
    json lp = logprobs_ ? completion_logprobs(backend_, events, offset_, top_) : json(nullptr);
    offset_ += text.size();
    streamed_ += text;
    return sse_event(completion_chunk(who_, text, nullptr, std::move(lp)));
  }

  std::string end(const GenerationResult& r) override {
    std::string out;
    if (r.text.size() > streamed_.size() && r.text.compare(0, streamed_.size(), streamed_) == 0) {
      out += sse_event(completion_chunk(who_, r.text.substr(streamed_.size()), nullptr));
    }
    out += sse_event(completion_chunk(who_, "", engine::finish_reason_name(r.finish)));
    if (usage_) out += sse_event(usage_chunk(who_, "text_completion", r));
    return out;
  }

 private:
  Backend& backend_;
  ResponseIdentity who_;
  std::string echo_;
  bool logprobs_, top_, usage_;
  std::size_t offset_ = 0;
  std::string streamed_;
};

// State one streamed response carries across content-provider calls.
struct Stream {
  std::shared_ptr<Job> job;
  std::unique_ptr<StreamFormat> format;
  engine::GenerationParams params;
  int fd = -1;
  std::vector<TokenEvent> first;  // events that arrived before the headers went out
  bool first_done = false;
  bool begun = false;
  bool finished = false;
  Clock::time_point started;
};

ConnectionLimits connection_limits(const ServerOptions& o) {
  ConnectionLimits l;
  l.framing.max_body = o.max_body;
  l.framing.max_header_bytes = o.max_header_bytes;
  l.framing.max_headers = o.max_headers;
  l.framing.max_line = std::min<std::size_t>(l.framing.max_line, o.max_header_bytes);
  l.header_timeout = o.header_timeout;
  l.idle_timeout = o.idle_timeout;
  l.body_timeout = o.body_timeout;
  l.max_connections = std::max(1, o.max_connections);
  l.max_connections_per_client = std::max(1, o.max_connections_per_client);
  l.connection_rate_per_client = o.connection_rate_per_client;
  return l;
}

// schema_in_prompt: tells the model the schema its reply must follow, in the system message
// (appended to a string system message the request has, else a new first message).
void describe_schema_in_prompt(json& messages, const std::string& schema) {
  const std::string text = "Reply with one JSON value that follows this JSON Schema:\n" + schema;
  if (!messages.empty() && messages[0].value("role", std::string()) == "system" && messages[0]["content"].is_string()) {
    messages[0]["content"] = messages[0]["content"].get<std::string>() + "\n\n" + text;
    return;
  }
  messages.insert(messages.begin(), json{{"role", "system"}, {"content", text}});
}

// The tools as the engine's tool grammar takes them: [{name, parameters}].
std::string tool_schemas_json(const json& tools) {
  json out = json::array();
  for (const auto& t : tools) {
    const json& fn = t["function"];
    json params = fn.contains("parameters") && fn["parameters"].is_object() ? fn["parameters"] : json::object();
    out.push_back({{"name", fn["name"]}, {"parameters", params}});
  }
  return out.dump();
}

}  // namespace

HttpServer::HttpServer(Backend& backend, ServerOptions options)
    : backend_(backend),
      options_(std::move(options)),
      scheduler_(std::make_unique<Scheduler>(backend, options_.queue, metrics_)),
      media_budget_(options_.media_budget),
      http_(std::make_unique<GuardedServer>(connection_limits(options_))) {
  install_routes();
}

HttpServer::~HttpServer() {
  if (running_) stop();
  wait();
}

void HttpServer::install_routes() {
  auto& s = *http_;
  // Framing, body and header limits, deadlines and the connection cap are enforced by
  // GuardedServer before httplib reads a request; httplib only sees complete requests.
  s.set_keep_alive_max_count(1000);
  s.set_refusal_observer([this](int status) { metrics_.count_request("other", status); });

  // The page at / and its assets (compiled in), CORS preflights, the API key on /v1; then
  // wrong path → 404, wrong method → 405; all before the body is read.
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    access_begin();
    // Without a key, the browser rules of browser_guard.h: a Host that a DNS rebinding could
    // have produced is refused before anything else (the page included).
    const bool keyless = options_.api_key.empty();
    if (keyless && !host_allowed(req.get_header_value("Host"), {options_.host, options_.allowed_hosts})) {
      send_error(res, ApiError(403, "Host '" + escape_for_log(req.get_header_value("Host"), 100) +
                                        "' is not served without --api-key (DNS rebinding protection): use "
                                        "localhost or an IP address, or start serve with --allowed-hosts NAME",
                               "", "host_not_allowed", "permission_error"));
      res.set_header("Connection", "close");  // the body, if any, was not read
      return httplib::Server::HandlerResponse::Handled;
    }
    if (options_.web_ui && (req.method == "GET" || req.method == "HEAD")) {
      if (const WebAsset* a = find_web_asset(req.path)) {
        res.set_content(a->body.data(), a->body.size(), std::string(a->content_type).c_str());
        res.set_header("Cache-Control", "no-cache");
        res.set_header("Content-Security-Policy", kPageCsp);
        res.set_header("X-Frame-Options", "DENY");
        res.set_header("X-Content-Type-Options", "nosniff");
        res.set_header("Referrer-Policy", "no-referrer");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    const Route* r = find_route(req.path);
    if (r && is_preflight(req)) {
      res.status = 204;  // the CORS headers (if any origin is allowed) are added after routing
      return httplib::Server::HandlerResponse::Handled;
    }
    if (r && req.path.rfind("/v1", 0) == 0 && !authorized(req, options_.api_key)) {
      send_error(res, ApiError(401, "missing or wrong API key: send 'Authorization: Bearer <key>' (ringlm serve --api-key)",
                               "", "invalid_api_key", "authentication_error"));
      res.set_header("WWW-Authenticate", "Bearer");
      res.set_header("Connection", "close");  // the body, if any, was not read
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!r) {
      send_error(res, ApiError(404, "no route for " + req.method + " " + req.path, "", "not_found"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != r->method && !(req.method == "HEAD" && std::string(r->method) == "GET")) {
      send_error(res, ApiError(405, "method " + req.method + " is not allowed on " + req.path + " (use " + r->method + ")",
                               "", "method_not_allowed"));
      res.set_header("Allow", r->method);
      res.set_header("Connection", "close");  // the body, if any, was not read
      return httplib::Server::HandlerResponse::Handled;
    }
    // A browser sends text/plain, form and multipart bodies cross-origin without asking
    // first; without a key only JSON is taken (the API takes nothing else anyway).
    if (keyless && req.method == "POST" && !is_json_content_type(req.get_header_value("Content-Type"))) {
      const std::string ct = req.get_header_value("Content-Type");
      send_error(res, ApiError(415,
                               "request body must be sent with Content-Type: application/json, not " +
                                   (ct.empty() ? std::string("none") : "'" + escape_for_log(ct, 100) + "'") +
                                   " (curl: -H 'Content-Type: application/json')",
                               "", "unsupported_media_type"));
      res.set_header("Connection", "close");  // the body, if any, was not read
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // Errors httplib produces itself (413 body too large, 400 bad request line, ...).
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.content_provider_resource_releaser_) return httplib::Server::HandlerResponse::Unhandled;
    std::string message = "request failed";
    std::string code;
    if (res.status == 413) {
      message = "request body is larger than the limit of " + std::to_string(options_.max_body) + " bytes";
      // cpp-httplib caps form-encoded bodies on its own (curl -d sends that type by default),
      // far below --max-body: say so instead of naming the wrong limit.
      if (req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0)
        message = "a request body sent as application/x-www-form-urlencoded is limited to " +
                  std::to_string(CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH) +
                  " bytes; send it with Content-Type: application/json";
      code = "body_too_large";
    } else if (res.status == 404) {
      message = "not found";
      code = "not_found";
    } else if (res.status == 400) {
      message = "malformed HTTP request";
    }
    send_error(res, ApiError(res.status, message, "", code));
    return httplib::Server::HandlerResponse::Handled;
  }));

  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, ApiError(500, "internal server error"));
  });

  s.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    add_cors_headers(req, res, options_.cors_origin);
  });

  // Called once the whole response (a stream included) has been written.
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    const Route* r = find_route(req.path);
    metrics_.count_request(r ? r->path : "other", res.status);
    if (options_.access_log) {
      const std::string line = access_line(req, res) + "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);  // one write: lines of concurrent requests do not mix
    }
  });

  auto guarded = [this](void (HttpServer::*fn)(const httplib::Request&, httplib::Response&)) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        (this->*fn)(req, res);
      } catch (const ApiError& e) {
        send_error(res, e);
      } catch (const std::exception& e) {
        send_error(res, ApiError(500, std::string("internal error: ") + e.what()));
      }
    };
  };
  s.Post("/v1/chat/completions", guarded(&HttpServer::handle_chat));
  s.Post("/v1/completions", guarded(&HttpServer::handle_completion));
  s.Get("/v1/models", guarded(&HttpServer::handle_models));
  s.Get(R"(/v1/models/(.+))", guarded(&HttpServer::handle_model));
  s.Get("/health", guarded(&HttpServer::handle_health));
  s.Get("/metrics", guarded(&HttpServer::handle_metrics));
}

int HttpServer::resolve_max_tokens(const std::optional<int>& requested, std::size_t prompt_tokens,
                                   const char* prompt_param) {
  const long long ctx = backend_.context_length();
  const long long prompt = static_cast<long long>(prompt_tokens);
  if (requested && *requested > options_.max_tokens) {
    throw ApiError(400, "max_tokens " + std::to_string(*requested) + " is above this server's limit of " +
                            std::to_string(options_.max_tokens),
                   "max_tokens", "max_tokens_too_large");
  }
  if (requested && prompt + *requested > ctx) {
    throw ApiError(400, "the prompt (" + std::to_string(prompt) + " tokens) plus max_tokens (" +
                            std::to_string(*requested) + ") exceeds the context length of " + std::to_string(ctx) + " tokens",
                   prompt_param, "context_length_exceeded");
  }
  if (prompt >= ctx) {
    throw ApiError(400, "the prompt (" + std::to_string(prompt) + " tokens) leaves no room in the context length of " +
                            std::to_string(ctx) + " tokens",
                   prompt_param, "context_length_exceeded");
  }
  if (requested) return *requested;
  return static_cast<int>(std::min<long long>(options_.max_tokens, ctx - prompt));
}

// Streams a submitted job as SSE, or answers with an error status if it fails before its
// first token. Shared by both generation endpoints.
static void serve_stream(httplib::Response& res, std::shared_ptr<Stream> st, std::atomic<int>& open_streams,
                         Metrics& metrics) {
  // Hold the headers back until the first token, so that a request the engine rejects
  // (e.g. a schema that does not compile) still gets a proper status code.
  std::vector<TokenEvent> batch;
  for (;;) {
    st->first_done = st->job->take_events(batch, kPollInterval);
    st->first.insert(st->first.end(), batch.begin(), batch.end());
    if (st->first_done || !st->first.empty()) break;
    if (peer_closed(st->fd)) {
      st->job->cancel();
      await_job(*st->job, -1, nullptr);
      res.status = 499;  // client closed the request (nobody is reading this)
      return;
    }
  }
  if (st->first_done && (st->job->error_status() != 0 || st->job->result().finish == FinishReason::Cancelled)) {
    throw_job_error(*st->job);
  }
  ++open_streams;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st](std::size_t, httplib::DataSink& sink) {
        auto send = [&](const std::string& s) { return s.empty() || sink.write(s.data(), s.size()); };
        std::vector<TokenEvent> events;
        bool done;
        if (!st->begun) {
          st->begun = true;
          if (!send(st->format->begin())) return st->job->cancel(), false;
          events.swap(st->first);
          done = st->first_done;
        } else {
          done = st->job->take_events(events, kPollInterval);
        }
        if (!events.empty() && !send(st->format->tokens(events))) return st->job->cancel(), false;
        if (done) {
          std::string tail;
          const Job& job = *st->job;
          if (job.error_status() != 0 || job.result().finish == FinishReason::Cancelled) {
            try {
              throw_job_error(job);
            } catch (const ApiError& e) {
              tail = sse_event(e.to_json());
            }
          } else {
            tail = st->format->end(job.result()) + "data: [DONE]\n\n";
            access_tokens(job.result().prompt_tokens, job.result().completion_tokens);
          }
          st->finished = true;
          if (!send(tail)) return false;
          sink.done();
          return true;
        }
        if (events.empty() && peer_closed(st->fd)) return st->job->cancel(), false;
        return true;
      },
      [st, &open_streams, &metrics](bool) {
        if (!st->finished) st->job->cancel();  // client gone or server stopping
        metrics.observe_request_duration(std::chrono::duration<double>(Clock::now() - st->started).count());
        --open_streams;
      });
}

void HttpServer::handle_chat(const httplib::Request& req, httplib::Response& res) {
  const auto started = Clock::now();
  if (scheduler_->draining()) throw ApiError(503, "server is shutting down", "", "shutting_down");
  ChatRequest cr = parse_chat_request(parse_body(req.body));
  if (!cr.params.json_schema.empty() && cr.schema_in_prompt.value_or(options_.schema_in_prompt))
    describe_schema_in_prompt(cr.messages, cr.params.json_schema);
  // tool_choice "required" (or a named function, narrowed to it): the reply is a tool call
  // whose arguments follow that tool's parameter schema, enforced by the grammar.
  if (!cr.tools.empty() && cr.tool_choice == "required") cr.params.tool_schemas = tool_schemas_json(cr.tools);
  std::vector<std::int32_t> prompt;
  Scheduler::Reservation place;
  try {
    if (cr.media.empty()) {
      prompt = backend_.render_chat(cr.messages, cr.tools, cr.tool_choice, /*add_generation_prompt=*/true, cr.enable_thinking);
    } else {
      // Images and audio: read (data as sent, local image files only under
      // --allow-local-media); everything that can be known from their headers is checked
      // first (limits, token count against the context), then a queue place and a lease of
      // the media budget are taken, and only then are they decoded and encoded by the
      // backend into soft-token rows (issue #28: decoding came first, unbudgeted).
      const std::vector<MediaInput> media = load_media(cr.media, options_.media);
      const MediaPlan plan = backend_.plan_chat_media(cr.messages, cr.tools, cr.tool_choice, true, cr.enable_thinking, media);
      resolve_max_tokens(cr.max_tokens, static_cast<std::size_t>(plan.prompt_tokens), "messages");
      place = scheduler_->reserve();
      MediaBudget::Lease lease = media_budget_.acquire(plan.work_bytes, cr.media[0].param);
      PromptWithMedia pm = backend_.render_chat_media(cr.messages, cr.tools, cr.tool_choice, true, cr.enable_thinking, media);
      prompt = std::move(pm.ids);
      cr.params.prompt_embeddings = std::move(pm.embeddings);
    }
  } catch (const Error& e) {
    if (!e.param().empty()) throw ApiError::from(e, "media: ");
    if (e.kind() != ErrorKind::invalid_argument) throw ApiError::from(e, "chat template: ");
    throw ApiError(400, e.what(), "messages", "invalid_messages");
  }
  cr.params.max_tokens = resolve_max_tokens(cr.max_tokens, prompt.size(), "messages");
  const bool tools_active = !cr.tools.empty() && cr.tool_choice != "none";
  ResponseIdentity who{new_id("chatcmpl-"), static_cast<std::int64_t>(std::time(nullptr)), backend_.model_id()};

  auto job = std::make_shared<Job>(std::move(prompt), cr.params);
  scheduler_->submit(job, std::move(place));
  const int fd = connection_fd(req);

  if (cr.stream) {
    auto st = std::make_shared<Stream>();
    st->job = job;
    st->format = std::make_unique<ChatStreamFormat>(backend_, who, tools_active, cr.params.logprobs, cr.include_usage,
                                                    cr.enable_thinking && !tools_active ? backend_.thought_splitter() : nullptr);
    st->params = cr.params;
    st->fd = fd;
    st->started = started;
    serve_stream(res, st, open_streams_, metrics_);
    return;
  }

  std::vector<TokenEvent> events;
  if (!await_job(*job, fd, cr.params.logprobs ? &events : nullptr)) {
    res.status = 499;
    return;
  }
  if (job->error_status() != 0 || job->result().finish == FinishReason::Cancelled) throw_job_error(*job);
  const GenerationResult& r = job->result();
  access_tokens(r.prompt_tokens, r.completion_tokens);
  json message = {{"role", "assistant"}, {"content", r.text}};
  const char* finish = engine::finish_reason_name(r.finish);
  if (tools_active) {
    ParsedReply parsed = backend_.parse_reply(r.text);
    message["content"] = parsed.content;
    if (!parsed.reasoning.empty()) message["reasoning_content"] = parsed.reasoning;
    if (!parsed.tool_calls.empty()) {
      if (parsed.content.empty()) message["content"] = nullptr;
      message["tool_calls"] = tool_calls_json(parsed.tool_calls, false);
      finish = "tool_calls";
    }
  } else if (cr.enable_thinking) {
    // The thought as reasoning_content, the answer alone as content (what a schema constrains).
    std::unique_ptr<ThoughtSplitter> split = backend_.thought_splitter();
    ThoughtSplitter::Delta d;
    split->push(r.text, d);
    split->finish(d);
    message["content"] = d.content;
    if (!d.reasoning.empty()) message["reasoning_content"] = d.reasoning;
  }
  json logprobs = nullptr;
  if (cr.params.logprobs) {
    json content = json::array();
    for (const auto& ev : events) content.push_back(chat_logprob_entry(backend_, ev));
    logprobs = {{"content", std::move(content)}};
  }
  res.set_content(dump_json(chat_completion(who, std::move(message), finish, std::move(logprobs), r)), "application/json");
  metrics_.observe_request_duration(std::chrono::duration<double>(Clock::now() - started).count());
}

void HttpServer::handle_completion(const httplib::Request& req, httplib::Response& res) {
  const auto started = Clock::now();
  if (scheduler_->draining()) throw ApiError(503, "server is shutting down", "", "shutting_down");
  CompletionRequest cr = parse_completion_request(parse_body(req.body));
  std::vector<std::int32_t> prompt = backend_.tokenize(cr.prompt);
  cr.params.max_tokens = resolve_max_tokens(cr.max_tokens, prompt.size(), "prompt");
  ResponseIdentity who{new_id("cmpl-"), static_cast<std::int64_t>(std::time(nullptr)), backend_.model_id()};
  const std::string echo = cr.echo ? cr.prompt : "";
  const bool with_top = cr.params.top_logprobs > 0;

  auto job = std::make_shared<Job>(std::move(prompt), cr.params);
  scheduler_->submit(job);
  const int fd = connection_fd(req);

  if (cr.stream) {
    auto st = std::make_shared<Stream>();
    st->job = job;
    st->format = std::make_unique<CompletionStreamFormat>(backend_, who, echo, cr.params.logprobs, with_top, cr.include_usage);
    st->params = cr.params;
    st->fd = fd;
    st->started = started;
    serve_stream(res, st, open_streams_, metrics_);
    return;
  }

  std::vector<TokenEvent> events;
  if (!await_job(*job, fd, cr.params.logprobs ? &events : nullptr)) {
    res.status = 499;
    return;
  }
  if (job->error_status() != 0 || job->result().finish == FinishReason::Cancelled) throw_job_error(*job);
  const GenerationResult& r = job->result();
  access_tokens(r.prompt_tokens, r.completion_tokens);
  json logprobs = cr.params.logprobs ? completion_logprobs(backend_, events, echo.size(), with_top) : json(nullptr);
  res.set_content(dump_json(text_completion(who, echo + r.text, engine::finish_reason_name(r.finish), std::move(logprobs), r)),
                  "application/json");
  metrics_.observe_request_duration(std::chrono::duration<double>(Clock::now() - started).count());
}

static json model_json(Backend& backend) {
  return {{"id", backend.model_id()},
          {"object", "model"},
          {"created", 0},
          {"owned_by", "ringlm"},
          {"context_length", backend.context_length()}};
}

void HttpServer::handle_models(const httplib::Request&, httplib::Response& res) {
  res.set_content(dump_json({{"object", "list"}, {"data", json::array({model_json(backend_)})}}), "application/json");
}

void HttpServer::handle_model(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches.size() > 1 ? req.matches[1].str() : "";
  if (id != backend_.model_id()) throw ApiError(404, "model '" + id + "' does not exist", "model", "model_not_found");
  res.set_content(dump_json(model_json(backend_)), "application/json");
}

void HttpServer::handle_health(const httplib::Request&, httplib::Response& res) {
  const bool draining = scheduler_->draining();
  json body = {{"status", draining ? "shutting_down" : "ok"},
               {"model", backend_.model_id()},
               {"slots", scheduler_->slots()},
               {"slots_active", scheduler_->active()},
               {"queue_depth", scheduler_->queue_depth()}};
  res.status = draining ? 503 : 200;
  res.set_content(dump_json(body), "application/json");
}

void HttpServer::handle_metrics(const httplib::Request&, httplib::Response& res) {
  Gauges g;
  g.queue_depth = scheduler_->queue_depth();
  g.slots_active = scheduler_->active();
  g.slots_total = scheduler_->slots();
  g.kv_used = backend_.kv_tokens_used();
  g.kv_capacity = backend_.kv_tokens_capacity();
  g.media_bytes_in_use = media_budget_.bytes_in_use();
  g.media_max_bytes = media_budget_.max_bytes();
  g.media_active = media_budget_.active();
  g.media_refused = media_budget_.refused();
  backend_.add_gauges(g);
  res.set_content(metrics_.render(g), "text/plain; version=0.0.4");
}

int HttpServer::start() {
  // httplib listens with a backlog of 5; a burst of new connections beyond that has its SYNs
  // dropped and retried a second later. Remember the listening socket to widen the backlog.
  int listen_fd = -1;
  http_->set_socket_options([&listen_fd](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_fd = sock;
  });
  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.host);
  } else if (!http_->bind_to_port(options_.host, port)) {
    port = -1;
  }
  if (port <= 0) fail("serve: cannot listen on ", options_.host, ":", options_.port, " (address in use or not local?)");
  if (listen_fd >= 0) ::listen(listen_fd, 1024);  // re-listening only updates the backlog
  running_ = true;
  listener_ = std::thread([this] {
    http_->listen_after_bind();
    running_ = false;
  });
  return port;
}

void HttpServer::wait() {
  if (listener_.joinable()) listener_.join();
}

void HttpServer::stop() {
  std::lock_guard lock(stop_mu_);
  if (stop_requested_.exchange(true)) return;
  scheduler_->begin_drain();
  const auto now = Clock::now();
  if (!scheduler_->wait_idle(now + options_.shutdown_grace)) {
    scheduler_->cancel_all();
    scheduler_->wait_idle(Clock::now() + std::chrono::seconds(5));
  }
  // Let streams write their final chunk before the listener goes (httplib stops calling
  // content providers once it is stopping).
  const auto flush_deadline = Clock::now() + std::chrono::seconds(2);
  while (open_streams_.load() > 0 && Clock::now() < flush_deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  http_->stop();
}

}  // namespace ringlm::server
