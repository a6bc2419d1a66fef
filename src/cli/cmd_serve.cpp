// `ringlm serve`: the OpenAI-compatible HTTP server (see src/server/http_server.h). This file
// only parses flags, builds the backend and turns SIGINT/SIGTERM into a graceful stop.
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/common_options.h"
#include "cli/environment.h"
#include "server/engine_backend.h"
#include "server/fake_backend.h"
#include "server/connection_guard.h"
#include "server/http_server.h"
#include "util/error.h"

namespace {

struct ServeArgs {
  ringlm::cli::ModelFlags model;  // -m/--model, --ctx (per slot), --threads, --weights, ...
  ringlm::server::ServerOptions server;
  ringlm::cli::DraftFlags draft;
  int slots = 1;
  bool fake = false;
  bool trust_control_tokens = false;
  int mask_budget_ms = 10000;
  std::size_t mask_budget_mb = 256;
  std::size_t prefix_cache_mb = 256;
  int fake_token_delay_us = 1000;
  int grace_ms = 10000;
  int header_timeout_ms = 10000, idle_timeout_ms = 5000, body_timeout_ms = 30000;
  std::string api_key_file;
  std::size_t media_memory_mb = 1024;
  ServeArgs() { server.access_log = true; }  // on by default for the command (--no-access-log)
};

// Every open connection is a descriptor: make sure --max-connections fits under the soft
// limit (1024 by default), as far as the hard limit allows.
void raise_descriptor_limit(int connections) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = static_cast<rlim_t>(connections) + 256;
  if (rl.rlim_cur >= want) return;
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min(want, rl.rlim_max);
  setrlimit(RLIMIT_NOFILE, &rl);
}

// The key from --api-key, else --api-key-file (its first line), else RINGLM_API_KEY: the last
// two keep it out of the command line, which any local user can read with ps.
std::string resolve_api_key(const ServeArgs& args) {
  if (!args.server.api_key.empty() && !args.api_key_file.empty())
    ringlm::fail("serve: give --api-key or --api-key-file, not both");
  if (!args.server.api_key.empty()) return args.server.api_key;
  if (!args.api_key_file.empty()) {
    std::string text = ringlm::cli::read_text_file(args.api_key_file);
    text = text.substr(0, text.find('\n'));
    while (!text.empty() && (text.back() == '\r' || text.back() == ' ' || text.back() == '\t')) text.pop_back();
    if (text.empty()) ringlm::fail(args.api_key_file, ": --api-key-file holds no key on its first line");
    return text;
  }
  return ringlm::cli::api_key_from_env();
}

void run_serve(ServeArgs args) {
  using namespace ringlm::server;
  args.server.api_key = resolve_api_key(args);
  if (args.server.host != "127.0.0.1" && args.server.host != "localhost" && args.server.host != "::1" &&
      args.server.api_key.empty()) {
    // Not a hard rule of HTTP, but without --api-key anyone who reaches the port may use it.
    std::fprintf(stderr,
                 "ringlm serve: warning: listening on %s without --api-key exposes the server beyond this machine\n",
                 args.server.host.c_str());
  }
  // Block the stop signals in every thread (the server's threads inherit this mask) and
  // receive them synchronously below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  bound_allocator_retention();  // before the engine and the connection threads allocate
  std::unique_ptr<Backend> backend;
  if (args.fake) {
    FakeBackendOptions fo;
    fo.slots = args.slots;
    if (args.model.ctx > 0) fo.context_length = args.model.ctx;
    fo.token_delay = std::chrono::microseconds(args.fake_token_delay_us);
    backend = std::make_unique<FakeBackend>(fo);
  } else {
    BackendOptions bo;
    bo.engine = args.model.engine_options();  // prints the demo-model notice when it is the demo
    bo.slots = args.slots;
    bo.trust_control_tokens = args.trust_control_tokens;
    bo.mask_budget_ms = args.mask_budget_ms;
    bo.mask_budget_mb = args.mask_budget_mb;
    bo.prefix_cache_bytes = args.prefix_cache_mb << 20;
    bo.draft = args.draft.params();
    backend = make_engine_backend(bo);
  }
  ServerOptions so = args.server;
  so.media_budget.max_bytes = args.media_memory_mb << 20;
  if (args.fake) so.model_notice = "fake backend: a deterministic stand-in for tests, not a model";
  else if (args.model.model.empty() && args.model.hf_repo.empty())
    so.model_notice = "the built-in demo model: tiny, random weights; its text is meaningless (pass --model DIR for a real one)";
  so.shutdown_grace = std::chrono::milliseconds(args.grace_ms);
  so.header_timeout = std::chrono::milliseconds(args.header_timeout_ms);
  so.idle_timeout = std::chrono::milliseconds(args.idle_timeout_ms);
  so.body_timeout = std::chrono::milliseconds(args.body_timeout_ms);
  raise_descriptor_limit(so.max_connections);
  HttpServer server(*backend, so);
  const int port = server.start();
  std::fprintf(stderr, "ringlm serve: %s on http://%s:%d (%d slots, queue %d, pid %d)\n", backend->model_id().c_str(),
               so.host.c_str(), port, backend->slots(), so.queue, static_cast<int>(getpid()));
  std::fflush(stderr);

  const timespec tick{0, 200 * 1000 * 1000};
  while (server.running()) {
    int sig = sigtimedwait(&stop_signals, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM) {
      std::fprintf(stderr, "ringlm serve: %s received, finishing in-flight requests (again to force)\n",
                   sig == SIGINT ? "SIGINT" : "SIGTERM");
      // A second signal takes its default action (terminate) instead of waiting for the drain.
      pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
      server.stop();
      break;
    }
  }
  server.wait();
  std::fprintf(stderr, "ringlm serve: stopped\n");
}

}  // namespace

RINGLM_COMMAND(serve) {
  auto args = std::make_shared<ServeArgs>();
  auto* sub = app.add_subcommand("serve", "OpenAI-compatible HTTP server (chat/completions, completions, models, health, metrics)");
  sub->footer("Example:\n  ringlm serve -m DIR --threads 4 --port 8080 --api-key KEY   # then open http://127.0.0.1:8080/");
  args->model.add_to(sub);
  args->draft.add_to(sub);
  sub->add_option("--host", args->server.host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", args->server.port, "Port (0 = any free port)")->capture_default_str()->check(CLI::Range(0, 65535));
  sub->add_option("--slots,--parallel", args->slots, "Concurrent generations (-np N, as in llama.cpp)")->capture_default_str()->check(CLI::Range(1, 256));
  sub->add_option("--queue", args->server.queue, "Requests that may wait for a slot (more get 429)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  sub->add_option("--max-tokens", args->server.max_tokens, "Largest max_tokens a request may ask for")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--max-body", args->server.max_body, "Request body limit in bytes")->capture_default_str();
  sub->add_option("--api-key", args->server.api_key,
                  "Require 'Authorization: Bearer KEY' on every /v1 route (the web page asks for it)");
  sub->add_option("--api-key-file", args->api_key_file,
                  "Read the API key from the first line of FILE (kept out of `ps`; env RINGLM_API_KEY works too)");
  sub->add_option("--allowed-hosts", args->server.allowed_hosts,
                  "Without an API key, Host names served besides localhost, IP addresses and --host "
                  "(DNS rebinding protection; comma-separated, * = any)")
      ->delimiter(',');
  sub->add_option("--cors-origin", args->server.cors_origin,
                  "Allow browser pages from this origin (e.g. http://localhost:3000, or *) to call the API");
  sub->add_flag("!--no-web-ui", args->server.web_ui, "Do not serve the chat and extraction page at /");
  sub->add_flag("!--no-access-log", args->server.access_log, "Do not print one line per request to stderr");
  sub->add_option("--max-header-bytes", args->server.max_header_bytes, "Request head limit in bytes (431 above)")
      ->capture_default_str()
      ->check(CLI::Range(1024, 1 << 24));
  sub->add_option("--max-headers", args->server.max_headers, "Header fields per request (431 above)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  sub->add_option("--max-connections", args->server.max_connections,
                  "Open connections; past it idle ones are closed, else 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  sub->add_option("--max-connections-per-client", args->server.max_connections_per_client,
                  "Open connections per client IP address (503 above)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  sub->add_option("--max-connection-rate-per-client", args->server.connection_rate_per_client,
                  "New connections per second per client IP, bursts of twice that (429 above; 0 = no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  sub->add_option("--header-timeout-ms", args->header_timeout_ms, "Time a request head may take to arrive (408 after)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600000));
  sub->add_option("--idle-timeout-ms", args->idle_timeout_ms, "An idle keep-alive connection is closed after this")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600000));
  sub->add_option("--body-timeout-ms", args->body_timeout_ms, "Time a request body may take to arrive (408 after)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600000));
  sub->add_option("--mask-budget-ms", args->mask_budget_ms,
                  "Per request: time guided decoding may spend computing token masks (400 past it; 0 = unlimited)")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600000));
  sub->add_option("--mask-budget-mb", args->mask_budget_mb,
                  "Per request: growth of the grammar caches it may cause (400 past it; 0 = unlimited)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  sub->add_flag("--schema-in-prompt", args->server.schema_in_prompt,
                "Describe a request's response_format schema to the model in a system message (off by "
                "default, as OpenAI; the request field schema_in_prompt overrides)");
  sub->add_option("--prefix-cache-mb", args->prefix_cache_mb,
                  "KV of shared prompt prefixes kept across requests, least recently used dropped (0 = off)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--allow-local-media", args->server.media.allow_dir,
                  "Image parts may name local files, only under this folder (default: data: URLs only; never the network)")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--max-media-bytes", args->server.media.max_bytes,
                  "Largest encoded image or audio clip (data: URL, input_audio data or file) a request may carry (400 above)")
      ->capture_default_str();
  sub->add_option("--media-memory-mb", args->media_memory_mb,
                  "Memory all requests together may hold decoding and encoding images and audio, estimated from "
                  "their headers before decoding (413 for a request that can never fit, 429 while others hold it)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--media-concurrency", args->server.media_budget.max_concurrent,
                  "Requests that may decode and encode media at once (429 above)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  sub->add_flag("--trust-control-tokens", args->trust_control_tokens,
                "Parse control tokens written in messages (e.g. <turn|>) as control tokens; trusted clients only");
  sub->add_option("--shutdown-grace-ms", args->grace_ms, "How long in-flight requests may run after SIGTERM")
      ->capture_default_str();
  // Test-only: a deterministic stand-in for the model (src/server/fake_backend.h).
  sub->add_flag("--fake-backend", args->fake)->group("");
  sub->add_option("--fake-token-delay-us", args->fake_token_delay_us)->group("");
  sub->callback([args] { run_serve(*args); });
}
