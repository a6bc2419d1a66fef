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
#include "server/stream.h"
#include "server/stream_formats.h"
#include "server/web_ui.h"
#include "util/error.h"

namespace ringlm::server {

using engine::FinishReason;
using engine::GenerationResult;
using engine::TokenEvent;
using json = nlohmann::ordered_json;  // keys keep the order they were given in (schemas, tool arguments)
using Clock = std::chrono::steady_clock;

namespace {

struct Route {
  const char* path;
  const char* method;
};
constexpr Route kRoutes[] = {{"/v1/chat/completions", "POST"},
                             {"/v1/completions", "POST"},
                             {"/v1/responses", "POST"},
                             {"/v1/embeddings", "POST"},
                             {"/embeddings", "POST"},  // llama-server's alias (OpenAI's shape here)
                             {"/v1/models", "GET"},
                             {"/health", "GET"},
                             {"/metrics", "GET"},
                             // llama-server's utility routes (utility_endpoints.cpp)
                             {"/tokenize", "POST"},
                             {"/detokenize", "POST"},
                             {"/apply-template", "POST"},
                             {"/props", "GET"}};

constexpr Route kModelRoute = {"/v1/models/{id}", "GET"};
constexpr std::string_view kModelPrefix = "/v1/models/";

// Probes stay open; every other route, the /v1 API and the utility routes alike, needs the key.
bool needs_key(const std::string& path) { return path != "/health" && path != "/metrics"; }

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
  l.slow_head = o.slow_head;
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
    if (r && needs_key(req.path) && !authorized(req, options_.api_key)) {
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
  s.Post("/v1/responses", guarded(&HttpServer::handle_responses));
  s.Post("/v1/embeddings", guarded(&HttpServer::handle_embeddings));
  s.Post("/embeddings", guarded(&HttpServer::handle_embeddings));
  s.Post("/tokenize", guarded(&HttpServer::handle_tokenize));
  s.Post("/detokenize", guarded(&HttpServer::handle_detokenize));
  s.Post("/apply-template", guarded(&HttpServer::handle_apply_template));
  s.Get("/props", guarded(&HttpServer::handle_props));
}

int HttpServer::resolve_max_tokens(const std::optional<int>& requested, std::size_t prompt_tokens, const char* prompt_param,
                                   httplib::Response& res) {
  const long long ctx = backend_.context_length();
  const long long prompt = static_cast<long long>(prompt_tokens);
  if (prompt >= ctx) {
    throw ApiError(400, "the prompt (" + std::to_string(prompt) + " tokens) leaves no room in the context length of " +
                            std::to_string(ctx) + " tokens",
                   prompt_param, "context_length_exceeded");
  }
  const long long room = std::min<long long>(options_.max_tokens, ctx - prompt);
  if (!requested) return static_cast<int>(room);
  // More than fits is clamped, as llama-server does, and the header says so: the reply then
  // ends with finish_reason "length" where the limit cut it.
  if (*requested > room) {
    const bool by_server = options_.max_tokens <= ctx - prompt;
    res.set_header(kMaxTokensClampedHeader, "requested=" + std::to_string(*requested) + " used=" + std::to_string(room) +
                                                " limit=" + (by_server ? "server" : "context"));
    return static_cast<int>(room);
  }
  return *requested;
}

std::vector<std::int32_t> HttpServer::chat_prompt(ChatRequest& cr, httplib::Response& res,
                                                  Scheduler::Reservation& place) {
  if (!cr.params.json_schema.empty() && cr.schema_in_prompt.value_or(options_.schema_in_prompt))
    describe_schema_in_prompt(cr.messages, cr.params.json_schema);
  // tool_choice "required" (or a named function, narrowed to it): the reply is a tool call
  // whose arguments follow that tool's parameter schema, enforced by the grammar.
  if (!cr.tools.empty() && cr.tool_choice == "required") {
    cr.params.tool_schemas = tool_schemas_json(cr.tools);
    cr.params.single_tool_call = cr.single_tool_call;
  }
  std::vector<std::int32_t> prompt;
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
      httplib::Response check_only;  // the clamp header is set once, below, for the real prompt
      resolve_max_tokens(cr.max_tokens, static_cast<std::size_t>(plan.prompt_tokens), "messages", check_only);
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
  cr.params.max_tokens = resolve_max_tokens(cr.max_tokens, prompt.size(), "messages", res);
  return prompt;
}

std::vector<std::shared_ptr<Job>> HttpServer::submit_jobs(const std::vector<std::int32_t>& prompt,
                                                          const engine::GenerationParams& params, int n,
                                                          Scheduler::Reservation&& place) {
  std::vector<std::shared_ptr<Job>> jobs;
  try {
    for (int i = 0; i < n; ++i) {
      // The choices differ by seed (seed, seed+1, ...: a given seed still repeats the whole set).
      engine::GenerationParams p = params;
      p.sampling.seed += static_cast<std::uint64_t>(i);
      jobs.push_back(std::make_shared<Job>(prompt, std::move(p)));
      // The first choice takes the queue place held while media was encoded (if any).
      if (i == 0) scheduler_->submit(jobs.back(), std::move(place));
      else scheduler_->submit(jobs.back());
    }
  } catch (...) {
    // All or none: a queue that fills up part way takes back the choices it already took.
    for (auto& j : jobs) j->cancel();
    throw;
  }
  return jobs;
}

void HttpServer::handle_chat(const httplib::Request& req, httplib::Response& res) {
  const auto started = Clock::now();
  if (scheduler_->draining()) throw ApiError(503, "server is shutting down", "", "shutting_down");
  ChatRequest cr = parse_chat_request(parse_body(req.body));
  Scheduler::Reservation place;
  std::vector<std::int32_t> prompt = chat_prompt(cr, res, place);
  const bool tools_active = !cr.tools.empty() && cr.tool_choice != "none";
  ResponseIdentity who{new_id("chatcmpl-"), static_cast<std::int64_t>(std::time(nullptr)), backend_.model_id()};
  auto jobs = submit_jobs(prompt, cr.params, cr.n, std::move(place));
  const int fd = connection_fd(req);

  if (cr.stream) {
    auto st = std::make_shared<Stream>();
    st->jobs = jobs;
    for (int i = 0; i < cr.n; ++i) {
      ChatStreamOptions o{i, tools_active, cr.single_tool_call, cr.params.logprobs, cr.include_usage, jobs[i]->params()};
      st->formats.push_back(make_chat_stream_format(
          backend_, who, std::move(o), cr.enable_thinking && !tools_active ? backend_.thought_splitter() : nullptr));
    }
    st->fd = fd;
    st->started = started;
    serve_stream(res, st, open_streams_, metrics_);
    return;
  }

  std::vector<std::vector<TokenEvent>> events;
  if (!await_choices(jobs, fd, cr.params.logprobs, events)) {
    res.status = 499;
    return;
  }
  json choices = json::array();
  for (int i = 0; i < cr.n; ++i) {
    const Job& job = *jobs[static_cast<std::size_t>(i)];
    choices.push_back(chat_choice(i, job.result(), job.params(), tools_active, cr, events[static_cast<std::size_t>(i)]));
  }
  const GenerationResult total = combined_result(jobs);
  access_tokens(total.prompt_tokens, total.completion_tokens);
  json body = chat_completion(who, nullptr, "stop", nullptr, total);
  body["choices"] = std::move(choices);
  res.set_content(dump_json(body), "application/json");
  metrics_.observe_request_duration(std::chrono::duration<double>(Clock::now() - started).count());
}

json HttpServer::chat_choice(int index, const GenerationResult& r, const engine::GenerationParams& params,
                             bool tools_active, const ChatRequest& cr, const std::vector<TokenEvent>& events) {
  json message = {{"role", "assistant"}, {"content", r.text}};
  const char* finish = engine::finish_reason_name(r.finish);
  if (tools_active) {
    ParsedReply parsed = backend_.parse_reply(r.text);
    limit_tool_calls(parsed, cr.single_tool_call);
    message["content"] = parsed.content;
    if (!parsed.reasoning.empty()) message["reasoning_content"] = parsed.reasoning;
    if (!parsed.tool_calls.empty()) {
      if (parsed.content.empty()) message["content"] = nullptr;
      message["tool_calls"] = tool_calls_json(parsed.tool_calls, false);
      // A reply cut by a limit says so, even when a call before the cut was complete.
      if (r.finish != FinishReason::Length) finish = "tool_calls";
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
  if (params.logprobs) {
    json content = json::array();
    for (const auto& ev : events) content.push_back(chat_logprob_entry(backend_, ev));
    logprobs = {{"content", std::move(content)}};
  }
  json choice = {{"index", index}, {"message", std::move(message)}, {"logprobs", std::move(logprobs)}, {"finish_reason", finish}};
  if (json err = truncation_error(params, r); !err.is_null()) choice["error"] = std::move(err);
  return choice;
}

void HttpServer::handle_completion(const httplib::Request& req, httplib::Response& res) {
  const auto started = Clock::now();
  if (scheduler_->draining()) throw ApiError(503, "server is shutting down", "", "shutting_down");
  CompletionRequest cr = parse_completion_request(parse_body(req.body));
  std::vector<std::int32_t> prompt = backend_.tokenize(cr.prompt);
  cr.params.max_tokens = resolve_max_tokens(cr.max_tokens, prompt.size(), "prompt", res);
  ResponseIdentity who{new_id("cmpl-"), static_cast<std::int64_t>(std::time(nullptr)), backend_.model_id()};
  const std::string echo = cr.echo ? cr.prompt : "";
  const bool with_top = cr.params.top_logprobs > 0;
  auto jobs = submit_jobs(prompt, cr.params, cr.n, Scheduler::Reservation{});
  const int fd = connection_fd(req);

  if (cr.stream) {
    auto st = std::make_shared<Stream>();
    st->jobs = jobs;
    for (int i = 0; i < cr.n; ++i)
      st->formats.push_back(make_completion_stream_format(backend_, who, echo, cr.params.logprobs, with_top, cr.include_usage,
                                                          jobs[i]->params(), i));
    st->fd = fd;
    st->started = started;
    serve_stream(res, st, open_streams_, metrics_);
    return;
  }

  std::vector<std::vector<TokenEvent>> events;
  if (!await_choices(jobs, fd, cr.params.logprobs, events)) {
    res.status = 499;
    return;
  }
  json choices = json::array();
  for (int i = 0; i < cr.n; ++i) {
    const Job& job = *jobs[static_cast<std::size_t>(i)];
    const GenerationResult& r = job.result();
    json logprobs = cr.params.logprobs
                        ? completion_logprobs(backend_, events[static_cast<std::size_t>(i)], echo.size(), with_top)
                        : json(nullptr);
    json choice = {{"index", i}, {"text", echo + r.text}, {"logprobs", std::move(logprobs)},
                   {"finish_reason", engine::finish_reason_name(r.finish)}};
    if (json err = truncation_error(job.params(), r); !err.is_null()) choice["error"] = std::move(err);
    choices.push_back(std::move(choice));
  }
  const GenerationResult total = combined_result(jobs);
  access_tokens(total.prompt_tokens, total.completion_tokens);
  json body = text_completion(who, "", "stop", nullptr, total);
  body["choices"] = std::move(choices);
  res.set_content(dump_json(body), "application/json");
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
  // httplib's stop() does nothing until the listener thread has entered listen_after_bind
  // (is_running() turns true there), so a stop in that gap left the thread in accept()
  // forever: a SIGTERM right after the banner on a loaded host hung `serve`. Return only once
  // the listener runs (or has already ended).
  while (!http_->is_running() && running_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port;
}

int HttpServer::open_connections() const { return http_->open_connections(); }
int HttpServer::heads_in_progress() const { return http_->heads_in_progress(); }

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
