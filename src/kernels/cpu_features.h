// What the CPU we run on can execute, detected once (CPUID + XGETBV on x86-64, so an
// OS that does not save the AVX-512 state is respected; HWCAP on aarch64).
#pragma once

#include <string>

namespace ringlm::kernels {

struct CpuFeatures {
  bool avx2 = false;        // AVX2 + FMA + F16C, OS saves YMM
  bool avxvnni = false;     // avx2 + AVX-VNNI (VEX vpdpbusd on ymm; Alder Lake and later)
  bool avx512 = false;      // AVX-512 F/BW/VL/DQ, OS saves ZMM + opmask
  bool avx512vnni = false;  // avx512 + AVX512_VNNI
  bool amx_int8 = false;    // AMX-TILE + AMX-INT8 reported by CPUID, tile state in XCR0 (Isa::amx also needs the OS's permission)
  bool neon = false;        // aarch64 Advanced SIMD
  bool neon_dotprod = false;
  std::string describe() const;
};

const CpuFeatures& cpu_features();

}  // namespace ringlm::kernels
