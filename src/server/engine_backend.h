// The factory for the real, engine-backed Backend used by `ringlm serve`. Implemented with the
// engine (src/server/engine_backend.cpp); the HTTP layer only knows the Backend interface.
#pragma once

#include <memory>
#include <string>

#include "server/backend.h"

namespace ringlm::server {

struct BackendOptions {
  std::string model_dir;   // checkpoint + tokenizer + chat template
  int slots = 1;           // concurrent generations (sessions, each with its own KV cache)
  int context_length = 0;  // per-slot context in tokens; 0 = the model's default
  std::string schema_mode = "strict";  // for requests without "schema_mode" (guided::SchemaMode)
};

// Loads the model and returns a Backend with `options.slots` slots. Throws ringlm::Error
// (naming the file or field at fault) if the model cannot be loaded.
std::unique_ptr<Backend> make_engine_backend(const BackendOptions& options);

}  // namespace ringlm::server
