#include "kernels/cpu_features.h"

#include <cstddef>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif
#if defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace ringlm::kernels {

namespace {

#if defined(__x86_64__)
unsigned long long read_xcr0() {
  unsigned eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27), fma = c & (1u << 12), f16c = c & (1u << 29), avx = c & (1u << 28);
  if (!osxsave || !avx) return f;
  const unsigned long long xcr0 = read_xcr0();
  const bool ymm_saved = (xcr0 & 0x6) == 0x6;
  const bool zmm_saved = (xcr0 & 0xe6) == 0xe6;  // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM
  const bool tile_saved = (xcr0 & 0x60000) == 0x60000;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx2 = b & (1u << 5);
  const bool avx512f = b & (1u << 16), avx512dq = b & (1u << 17), avx512bw = b & (1u << 30),
             avx512vl = b & (1u << 31), vnni = c & (1u << 11);
  const bool amx_tile = d & (1u << 24), amx_int8 = d & (1u << 25);
  __cpuid_count(7, 1, a, b, c, d);
  const bool avx_vnni = a & (1u << 4);
  f.avx2 = ymm_saved && avx2 && fma && f16c;
  f.avxvnni = f.avx2 && avx_vnni;
  f.avx512 = f.avx2 && zmm_saved && avx512f && avx512dq && avx512bw && avx512vl;
  f.avx512vnni = f.avx512 && vnni;
  f.amx_int8 = tile_saved && amx_tile && amx_int8;
#elif defined(__aarch64__)
  f.neon = true;
#if defined(__linux__) && defined(HWCAP_ASIMDDP)
  f.neon_dotprod = getauxval(AT_HWCAP) & HWCAP_ASIMDDP;
#elif defined(__APPLE__)
  // macOS reports ARM features as integer sysctls; 1 when present (every M-series chip).
  int dotprod = 0;
  std::size_t len = sizeof(dotprod);
  f.neon_dotprod = sysctlbyname("hw.optional.arm.FEAT_DotProd", &dotprod, &len, nullptr, 0) == 0 && dotprod == 1;
#endif
#endif
  return f;
}

}  // namespace

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(avxvnni, "avxvnni");
  add(avx512, "avx512");
  add(avx512vnni, "avx512vnni");
  add(amx_int8, "amx-int8");
  add(neon, "neon");
  add(neon_dotprod, "neon-dotprod");
  return s.empty() ? "none" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

}  // namespace ringlm::kernels
