#include "cli/environment.h"

#include <cstdlib>
#include <string>
#include <string_view>

#include "kernels/cpu_features.h"
#include "kernels/dispatch.h"
#include "kernels/thread_pool.h"
#include "util/error.h"

namespace ringlm::cli {

namespace {
// The variable's value, or "" when it is unset.
std::string_view env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string_view(v) : std::string_view();
}
}  // namespace

int threads_from_env() {
  const std::string_view v = env("RINGLM_THREADS");
  if (v.empty()) return 0;
  const std::string text(v);
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || n < 1 || n > 256) fail("RINGLM_THREADS=", text, ": expected an integer in 1..256");
  return static_cast<int>(n);
}

void apply_process_environment() {
  if (const std::string_view isa_env = env("RINGLM_ISA"); !isa_env.empty()) {
    const kernels::Isa isa = kernels::parse_isa(isa_env);
    if (!kernels::isa_available(isa))
      fail("RINGLM_ISA=", std::string(isa_env), ": this build or CPU cannot run that path (has: ",
           kernels::cpu_features().describe(), ")");
    kernels::force_isa(isa);
  }
  if (const std::string_view p = env("RINGLM_Q4_PREFILL"); !p.empty()) {
    if (p != "0" && p != "1") fail("RINGLM_Q4_PREFILL=", std::string(p), ": expected 0 or 1");
    kernels::set_q4_prefill_gemm(p == "1");
  }
  if (const int n = threads_from_env(); n > 0) kernels::set_default_thread_count(static_cast<std::size_t>(n));
}

bool reference_attention_from_env() {
  const std::string_view a = env("RINGLM_ATTENTION");
  if (a.empty() || a == "tiled") return false;
  if (a == "reference") return true;
  fail("RINGLM_ATTENTION=", std::string(a), ": expected 'tiled' or 'reference'");
}

bool packed_weights_in_memory_from_env() {
  const std::string_view a = env("RINGLM_PACKED_WEIGHTS");
  if (a.empty() || a == "memory") return true;
  if (a == "mapped") return false;
  fail("RINGLM_PACKED_WEIGHTS=", std::string(a), ": expected 'memory' or 'mapped'");
}

engine::EngineOptions::HeadSubset lm_head_subset_from_env() {
  using H = engine::EngineOptions::HeadSubset;
  const std::string_view h = env("RINGLM_LM_HEAD_SUBSET");
  if (h.empty() || h == "auto") return H::Auto;
  if (h == "always") return H::Always;
  if (h == "never") return H::Never;
  fail("RINGLM_LM_HEAD_SUBSET must be auto, always or never, not '", std::string(h), "'");
}

bool greedy_head_from_env() {
  const std::string_view h = env("RINGLM_GREEDY_HEAD");
  if (h.empty() || h == "on") return true;
  if (h == "off") return false;
  fail("RINGLM_GREEDY_HEAD must be on or off, not '", std::string(h), "'");
}

}  // namespace ringlm::cli

namespace ringlm::cli {

std::string api_key_from_env() { return std::string(env("RINGLM_API_KEY")); }

}  // namespace ringlm::cli
