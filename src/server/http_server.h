// The OpenAI-compatible HTTP server: routes, request limits, streaming (SSE), metrics and
// graceful shutdown, over any Backend. `ringlm serve` is a thin shim around this class.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/backend.h"
#include "server/local_media.h"
#include "server/media_budget.h"
#include "server/metrics.h"
#include "server/scheduler.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace ringlm::server {

class GuardedServer;
struct ChatRequest;

// Set on a response whose max_tokens was more than the context (or --max-tokens) leaves room
// for: "requested=N used=M limit=context|server" (the request goes ahead with M).
constexpr const char* kMaxTokensClampedHeader = "X-Ringlm-Max-Tokens-Clamped";

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                  // 0 = any free port (start() returns it)
  int queue = 16;                   // requests that may wait for a slot; more get 429
  int max_tokens = 4096;            // largest max_tokens a request may ask for
  std::size_t max_body = 1 << 20;   // request body limit in bytes, any transfer coding (413 above)
  // Connection limits (connection_guard.h, docs/server.md "Limits").
  std::size_t max_header_bytes = 32 << 10;  // whole request head (431 above)
  std::size_t max_headers = 64;             // header fields (431 above)
  int max_connections = 256;                // open connections (503 above, idle ones evicted first)
  int max_connections_per_client = 64;      // per client IP address (503 above)
  double connection_rate_per_client = 100;  // new connections per second per client IP (429 above; 0 = off)
  std::chrono::milliseconds header_timeout{10000};  // a request head must arrive in this (408)
  std::chrono::milliseconds idle_timeout{5000};     // an idle keep-alive connection is closed after this
  std::chrono::milliseconds body_timeout{30000};    // a request body must arrive in this (408)
  std::chrono::milliseconds shutdown_grace{10000};  // in-flight requests get this long on stop()
  std::chrono::milliseconds slow_head{1000};        // past a connection cap, heads older than this may be evicted
  std::string api_key;              // non-empty: every /v1 route needs "Authorization: Bearer <key>"
  // Without api_key, Host names served besides loopback names, IP literals and `host`
  // (DNS rebinding protection, browser_guard.h); "*" = any.
  std::vector<std::string> allowed_hosts;
  std::string cors_origin;          // non-empty: browsers from this origin ("*" = any) may call the API
  bool web_ui = true;               // the chat / extraction page at / (src/server/web)
  // Said to people by /props and the page: non-empty for a stand-in model (the built-in demo
  // model has random weights; its text is meaningless).
  std::string model_notice;
  // Describe a request's response_format schema to the model in a system message (off by
  // default, as OpenAI does not inject it; the request field schema_in_prompt overrides).
  bool schema_in_prompt = false;
  bool access_log = false;          // one line per request on stderr (method, path, status, tokens, ms)
  MediaPolicy media;                // image parts: local folder allowed (--allow-local-media), size limit
  MediaBudgetOptions media_budget;  // decoding and encoding media: memory and concurrency (media_budget.h)
};

class HttpServer {
 public:
  HttpServer(Backend& backend, ServerOptions options);
  ~HttpServer();  // stop() if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving on a background thread; returns the bound port.
  // Throws ringlm::Error if the address cannot be bound.
  int start();
  // Blocks until the server has stopped.
  void wait();
  // Graceful shutdown: new requests get 503, in-flight ones may finish until the grace period
  // ends and are cancelled after it, then the listener closes. Idempotent, thread-safe.
  void stop();
  bool running() const { return running_.load(); }

  Scheduler& scheduler() { return *scheduler_; }
  Metrics& metrics() { return metrics_; }
  // Open connections, and those in the middle of a request head (connection_guard.h).
  int open_connections() const;
  int heads_in_progress() const;

 private:
  void install_routes();
  void handle_chat(const httplib::Request& req, httplib::Response& res);
  void handle_completion(const httplib::Request& req, httplib::Response& res);
  void handle_models(const httplib::Request& req, httplib::Response& res);
  void handle_model(const httplib::Request& req, httplib::Response& res);
  void handle_health(const httplib::Request& req, httplib::Response& res);
  void handle_metrics(const httplib::Request& req, httplib::Response& res);
  // Utility routes in llama-server's shapes (utility_endpoints.cpp).
  void handle_tokenize(const httplib::Request& req, httplib::Response& res);
  void handle_detokenize(const httplib::Request& req, httplib::Response& res);
  void handle_apply_template(const httplib::Request& req, httplib::Response& res);
  void handle_props(const httplib::Request& req, httplib::Response& res);
  // The OpenAI Responses API, stateless (responses_api.cpp).
  void handle_responses(const httplib::Request& req, httplib::Response& res);
  // OpenAI's embeddings, mean-pooled hidden states (embeddings_api.cpp).
  void handle_embeddings(const httplib::Request& req, httplib::Response& res);

  // What the chat routes share: the prompt of a parsed request (schema described in the
  // prompt if asked, the tool grammar set, media encoded) with params.max_tokens resolved.
  // `place`: the queue place taken before media is decoded (issue #28), for submit_jobs.
  std::vector<std::int32_t> chat_prompt(ChatRequest& cr, httplib::Response& res, Scheduler::Reservation& place);
  // max_tokens for a prompt: clamped to what is left of the context and --max-tokens (with
  // kMaxTokensClampedHeader set on `res`); 400 when the prompt leaves no room.
  int resolve_max_tokens(const std::optional<int>& requested, std::size_t prompt_tokens, const char* prompt_param,
                         httplib::Response& res);
  // Queues n jobs of one request (seeds seed, seed+1, ...), all or none.
  std::vector<std::shared_ptr<Job>> submit_jobs(const std::vector<std::int32_t>& prompt,
                                                const engine::GenerationParams& params, int n,
                                                Scheduler::Reservation&& place);
  // One choice of a chat.completion: content, reasoning, tool calls, logprobs, the cut flag.
  nlohmann::ordered_json chat_choice(int index, const engine::GenerationResult& r, const engine::GenerationParams& params,
                                     bool tools_active, const ChatRequest& cr,
                                     const std::vector<engine::TokenEvent>& events);

  Backend& backend_;
  ServerOptions options_;
  Metrics metrics_;
  std::unique_ptr<Scheduler> scheduler_;
  MediaBudget media_budget_;
  std::unique_ptr<GuardedServer> http_;
  std::thread listener_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_requested_{false};
  std::atomic<int> open_streams_{0};
  std::mutex stop_mu_;
};

}  // namespace ringlm::server
