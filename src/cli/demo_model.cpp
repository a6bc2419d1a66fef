// The built-in demo model behind every command run without --model. A build tree has it next
// to the binary (scripts/setup.sh writes build/demo-model). An installed ringlm writes it on
// first use into the user's cache ($XDG_CACHE_HOME/ringlm, else ~/.cache/ringlm), from the
// tokenizer installed under <prefix>/share/ringlm: `cmake --install` or the .deb then runs
// `ringlm run -p hi` with no other step. It is written to a temporary directory and renamed
// into place, so two first runs at once, or one killed halfway, leave no half-written model.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "cli/command.h"
#include "cli/test_model_writer.h"
#include "util/error.h"

namespace ringlm::cli {

namespace {

namespace fs = std::filesystem;

// The same demo model scripts/setup.sh writes: demo preset, seed 1.
constexpr const char* kDemoName = "demo-model-" RINGLM_VERSION "-seed1";

fs::path cache_home() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return x;
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache";
  return {};
}

std::string write_demo_model(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  if (ec) fail_as(ErrorKind::io, dir.parent_path().string(), ": cannot create the cache directory for the demo model: ", ec.message());
  const fs::path tmp = dir.parent_path() / (dir.filename().string() + ".tmp-" + std::to_string(getpid()));
  fs::remove_all(tmp, ec);
  std::fprintf(stderr, "ringlm: writing the built-in demo model to %s (first use; a few seconds)\n", dir.c_str());
  TestModelSpec spec;
  spec.preset = "demo";
  spec.seed = 1;
  try {
    write_test_model(tmp, spec);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::rename(tmp, dir, ec);  // another process may have won the race: its model is the same
  if (ec) fs::remove_all(tmp, ec);
  if (!fs::exists(dir / "config.json")) fail_as(ErrorKind::io, dir.string(), ": could not write the demo model");
  return dir.string();
}

}  // namespace

std::string default_model_dir() {
  if (const char* env = std::getenv("RINGLM_DEMO_MODEL")) return env;
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto dir = exe.parent_path() / "demo-model";
    if (fs::exists(dir / "config.json")) return dir.string();
  }
  const fs::path cache = cache_home();
  if (cache.empty()) return "";
  const fs::path dir = cache / "ringlm" / kDemoName;
  if (fs::exists(dir / "config.json")) return dir.string();
  return write_demo_model(dir);
}

}  // namespace ringlm::cli
