// The factory for the real, engine-backed Backend used by `ringlm serve`. Implemented with the
// engine (src/server/engine_backend.cpp); the HTTP layer only knows the Backend interface.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "server/backend.h"

namespace ringlm::server {

struct BackendOptions {
  // The model and how to run it, as every other command builds it (cli::ModelFlags):
  // model_dir, context_tokens (per slot), threads, weights/activations (the q4_0 fast path
  // unless told otherwise), grammar caches.
  engine::EngineOptions engine;
  int slots = 1;  // concurrent generations (sessions, each with its own KV cache)
  // The shared prompt-prefix KV cache (engine/prefix_cache.h) in bytes; 0: none.
  std::size_t prefix_cache_bytes = 256u << 20;
  // Control tokens written in message content are parsed as control tokens (trusted callers
  // only; by default they are plain text, chat/user_text.h).
  bool trust_control_tokens = false;
  // Per request: time computing token masks and growth of the grammar caches (0 = unlimited).
  int mask_budget_ms = 10000;
  std::size_t mask_budget_mb = 256;
  // Speculative decoding for every request (--draft, --draft-max); a request's
  // speculative.n_max lowers its k or turns drafting off (0).
  engine::DraftParams draft;
};

// Loads the model and returns a Backend with `options.slots` slots. Throws ringlm::Error
// (naming the file or field at fault) if the model cannot be loaded.
std::unique_ptr<Backend> make_engine_backend(const BackendOptions& options);

}  // namespace ringlm::server
