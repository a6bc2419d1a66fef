// TEMPORARY placeholder so the CLI links before the engine exists: the lead replaces this file
// with the real engine-backed Backend. `ringlm serve --fake-backend` works without it.
#include "server/engine_backend.h"

#include "util/error.h"

namespace ringlm::server {

std::unique_ptr<Backend> make_engine_backend(const BackendOptions& options) {
  fail("no engine backend in this build (cannot serve ", options.model_dir, ")");
}

}  // namespace ringlm::server
