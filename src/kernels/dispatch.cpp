#include "kernels/dispatch.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "kernels/cpu_features.h"
#include "kernels/kernel_table.h"
#include "util/error.h"

namespace ringlm::kernels {

namespace {

// In order of preference (best_isa takes the last available one).
constexpr Isa kAllIsas[] = {Isa::scalar, Isa::avx2, Isa::avxvnni, Isa::avx512, Isa::avx512vnni, Isa::amx, Isa::neon, Isa::neon_dotprod};

const KernelTable* table_for(Isa isa) {
  switch (isa) {
    case Isa::scalar: return &kScalarKernels;
#if defined(__x86_64__)
    case Isa::avx2: return &kAvx2Kernels;
    case Isa::avxvnni: return &kAvxVnniKernels;
    case Isa::avx512: return &kAvx512Kernels;
    case Isa::avx512vnni: return &kAvx512VnniKernels;
    case Isa::amx: return &kAmxKernels;
#endif
#if defined(__aarch64__)
    case Isa::neon: return &kNeonKernels;
    case Isa::neon_dotprod: return &kNeonDotprodKernels;
#endif
    default: return nullptr;
  }
}

std::atomic<Isa>& active() {
  static std::atomic<Isa> isa{best_isa()};
  return isa;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avxvnni: return "avxvnni";
    case Isa::avx512: return "avx512";
    case Isa::avx512vnni: return "avx512vnni";
    case Isa::amx: return "amx";
    case Isa::neon: return "neon";
    case Isa::neon_dotprod: return "neon-dotprod";
  }
  return "?";
}

Isa parse_isa(std::string_view name) {
  for (Isa isa : kAllIsas)
    if (name == isa_name(isa)) return isa;
  fail("unknown ISA path '", std::string(name), "' (expected scalar, avx2, avxvnni, avx512, avx512vnni, amx, neon or neon-dotprod)");
}

bool isa_available(Isa isa) {
  if (table_for(isa) == nullptr) return false;
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: return f.avx2;
    case Isa::avxvnni: return f.avxvnni;
    case Isa::avx512: return f.avx512;
    case Isa::avx512vnni: return f.avx512vnni;
#if defined(__x86_64__)
    case Isa::amx: return f.avx512vnni && f.amx_int8 && amx_os_ready();
#else
    case Isa::amx: return false;
#endif
    case Isa::neon: return f.neon;
    case Isa::neon_dotprod: return f.neon && f.neon_dotprod;
  }
  return false;
}

std::vector<Isa> available_isas() {
  std::vector<Isa> out;
  for (Isa isa : kAllIsas)
    if (isa_available(isa)) out.push_back(isa);
  return out;
}

Isa best_isa() { return available_isas().back(); }

void force_isa(Isa isa) {
  if (!isa_available(isa))
    fail("ISA path ", isa_name(isa), " is not available (CPU has: ", cpu_features().describe(), ")");
  active().store(isa, std::memory_order_relaxed);
}

Isa active_isa() { return active().load(std::memory_order_relaxed); }

namespace {
std::atomic<bool>& prefill_gemm_flag() {
  static std::atomic<bool> on{false};  // see dispatch.h
  return on;
}
}  // namespace
void set_q4_prefill_gemm(bool on) { prefill_gemm_flag().store(on, std::memory_order_relaxed); }
bool q4_prefill_gemm() { return prefill_gemm_flag().load(std::memory_order_relaxed); }

const KernelTable& active_kernels() { return *table_for(active_isa()); }

}  // namespace ringlm::kernels
