// `ringlm serve`: the OpenAI-compatible HTTP server (see src/server/http_server.h). This file
// only parses flags, builds the backend and turns SIGINT/SIGTERM into a graceful stop.
#include <csignal>
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "server/engine_backend.h"
#include "server/fake_backend.h"
#include "server/http_server.h"
#include "util/error.h"

namespace {

struct ServeArgs {
  std::string model;
  ringlm::server::ServerOptions server;
  int slots = 1;
  int ctx = 0;
  bool fake = false;
  int fake_token_delay_us = 1000;
  int grace_ms = 10000;
  std::string schema_mode = "strict";
};

void run_serve(const ServeArgs& args) {
  using namespace ringlm::server;
  if (args.server.host != "127.0.0.1" && args.server.host != "localhost" && args.server.host != "::1") {
    // Not a hard rule of HTTP, but this server has no authentication: say what it means.
    std::fprintf(stderr, "ringlm serve: warning: listening on %s exposes the server beyond this machine\n",
                 args.server.host.c_str());
  }
  // Block the stop signals in every thread (the server's threads inherit this mask) and
  // receive them synchronously below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::unique_ptr<Backend> backend;
  if (args.fake) {
    FakeBackendOptions fo;
    fo.slots = args.slots;
    if (args.ctx > 0) fo.context_length = args.ctx;
    fo.token_delay = std::chrono::microseconds(args.fake_token_delay_us);
    backend = std::make_unique<FakeBackend>(fo);
  } else {
    std::string model = args.model.empty() ? ringlm::cli::default_model_dir() : args.model;
    if (model.empty()) ringlm::fail("serve: --model DIR is required (no built-in demo model found)");
    BackendOptions bo;
    bo.model_dir = model;
    bo.slots = args.slots;
    bo.context_length = args.ctx;
    bo.schema_mode = args.schema_mode;
    backend = make_engine_backend(bo);
  }
  ServerOptions so = args.server;
  so.shutdown_grace = std::chrono::milliseconds(args.grace_ms);
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
  sub->add_option("--model", args->model, "Model directory (default: the built-in demo model)");
  sub->add_option("--host", args->server.host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", args->server.port, "Port (0 = any free port)")->capture_default_str()->check(CLI::Range(0, 65535));
  sub->add_option("--slots", args->slots, "Concurrent generations")->capture_default_str()->check(CLI::Range(1, 256));
  sub->add_option("--queue", args->server.queue, "Requests that may wait for a slot (more get 429)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  sub->add_option("--ctx", args->ctx, "Context length per slot in tokens (0 = the model's)")->check(CLI::Range(0, 1 << 20));
  sub->add_option("--max-tokens", args->server.max_tokens, "Largest max_tokens a request may ask for")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--max-body", args->server.max_body, "Request body limit in bytes")->capture_default_str();
  sub->add_option("--shutdown-grace-ms", args->grace_ms, "How long in-flight requests may run after SIGTERM")
      ->capture_default_str();
  // Test-only: a deterministic stand-in for the model (src/server/fake_backend.h).
  sub->add_option("--schema-mode", args->schema_mode,
                  "Default for requests without \"schema_mode\": strict refuses (400) a schema the grammar cannot "
                  "enforce exactly; lenient accepts it and enforces what it can")
      ->check(CLI::IsMember({"strict", "lenient"}))
      ->capture_default_str();
  sub->add_flag("--fake-backend", args->fake)->group("");
  sub->add_option("--fake-token-delay-us", args->fake_token_delay_us)->group("");
  sub->callback([args] { run_serve(*args); });
}
