// Run-time choice of the SIMD code path. By default the best path the CPU supports is used;
// force_isa() picks another one, which is how the tests run every path the machine has
// against the scalar reference, and how the CLI applies RINGLM_ISA=scalar|avx2|avxvnni|
// avx512|avx512vnni|amx|neon|neon-dotprod (cli/environment.h). amx = avx512vnni plus the
// tile unit for the multi-row q4 GEMM (q4_kernels_amx.cpp), where the CPU has AMX-INT8 and
// the OS grants the tile state.
#pragma once

#include <string_view>
#include <vector>

namespace ringlm::kernels {

// neon: baseline ARMv8.0 Advanced SIMD; neon_dotprod ("neon-dotprod"): + the ARMv8.2 DotProd
// extension (sdot), which every Apple M-series chip and recent ARM server core has.
enum class Isa { scalar, avx2, avxvnni, avx512, avx512vnni, amx, neon, neon_dotprod };

const char* isa_name(Isa isa);
// Throws ringlm::Error for an unknown name.
Isa parse_isa(std::string_view name);
// Whether this build has the path and this CPU can run it.
bool isa_available(Isa isa);
// Every available path, scalar first.
std::vector<Isa> available_isas();
// The best available path.
Isa best_isa();
// Selects a path for all later kernel calls (throws ringlm::Error if it is not available).
// Not meant to be called while kernels run on other threads.
void force_isa(Isa isa);
Isa active_isa();

// The AVX-512 VNNI prefill GEMM (q4_prefill_vnni_impl.h, 17+ activation rows) on or off (off:
// the multi-row tile serves every row count). Off by default: on the Zen 5 VM it was 4-9 %
// slower than the tile in E2B prefill 512 (BENCHMARKS.md, "Prefill GEMM"). Both give the
// same bits; the switch is for A/B timing (RINGLM_Q4_PREFILL=1, src/cli/environment.h), other
// hosts and tests.
void set_q4_prefill_gemm(bool on);
bool q4_prefill_gemm();

}  // namespace ringlm::kernels
