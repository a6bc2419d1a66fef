// Issue rates of the AVX-512 VNNI dot instruction and of what the q4 GEMM tile issues beside
// it (issue #13): how many zmm / ymm vpdpbusd retire per cycle, and whether FMA, integer
// adds, conversions and shifts share its ports. The clock is estimated from a chain of
// dependent integer adds (one per cycle), so the figures are per core cycle at the frequency
// the core ran at. Run it alone, at real-time priority, under the bench lock:
//
//   flock /work/bench.lock chrt -r 50 build/tools/bench_dot_ports
//
// Each test is 12 independent vpdpbusd chains (latency hidden) plus 0-3 other instructions
// per round, written in asm so the compiler cannot spill or reorder them. x86-64 with
// AVX-512 VNNI only.
#include <chrono>
#include <cstdio>

namespace {

double seconds(void (*fn)(long), long n) {
  const auto t0 = std::chrono::steady_clock::now();
  fn(n);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

#if defined(__x86_64__)
#define RINGLM_D(R, i) "vpdpbusd %%" R "30, %%" R "31, %%" R #i "\n\t"
#define RINGLM_D12(R)                                                                                          \
  RINGLM_D(R, 0) RINGLM_D(R, 1) RINGLM_D(R, 2) RINGLM_D(R, 3) RINGLM_D(R, 4) RINGLM_D(R, 5) RINGLM_D(R, 6) \
      RINGLM_D(R, 7) RINGLM_D(R, 8) RINGLM_D(R, 9) RINGLM_D(R, 10) RINGLM_D(R, 11)
#define RINGLM_CLOBBER \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14"
#define RINGLM_LOOP(name, body) \
  void name(long n) {           \
    for (long i = 0; i < n; ++i) __asm__ volatile(body ::: RINGLM_CLOBBER); \
  }

void adds(long n) {
  long x = 0;
  for (long i = 0; i < n; ++i)
    __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                     : "+r"(x));
}
RINGLM_LOOP(dots_zmm, RINGLM_D12("zmm"))
RINGLM_LOOP(dots_ymm, RINGLM_D12("ymm"))
RINGLM_LOOP(dots_fma3, RINGLM_D12("zmm") "vfmadd231ps %%zmm29, %%zmm29, %%zmm12\n\t"
                                         "vfmadd231ps %%zmm29, %%zmm29, %%zmm13\n\t"
                                         "vfmadd231ps %%zmm29, %%zmm29, %%zmm14\n\t")
RINGLM_LOOP(dots_mul_fma, RINGLM_D12("zmm") "vmulps %%zmm29, %%zmm29, %%zmm12\n\t"
                                            "vfmadd231ps %%zmm29, %%zmm29, %%zmm13\n\t")
RINGLM_LOOP(dots_add3, RINGLM_D12("zmm") "vpaddd %%zmm29, %%zmm12, %%zmm12\n\t"
                                         "vpaddd %%zmm29, %%zmm13, %%zmm13\n\t"
                                         "vpaddd %%zmm29, %%zmm14, %%zmm14\n\t")
RINGLM_LOOP(dots_cvt3, RINGLM_D12("zmm") "vcvtdq2ps %%zmm29, %%zmm12\n\t"
                                         "vcvtdq2ps %%zmm29, %%zmm13\n\t"
                                         "vcvtdq2ps %%zmm29, %%zmm14\n\t")
RINGLM_LOOP(dots_shift_and, RINGLM_D12("zmm") "vpslld $4, %%zmm29, %%zmm12\n\t"
                                              "vpslld $4, %%zmm29, %%zmm13\n\t"
                                              "vpandd %%zmm29, %%zmm28, %%zmm14\n\t")
#endif

}  // namespace

int main() {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512vnni")) {
    std::printf("bench_dot_ports: this CPU has no AVX-512 VNNI\n");
    return 0;
  }
  const long n_add = 100000000, n = 20000000;
  const double ghz = 8.0 * n_add / seconds(adds, n_add) / 1e9;
  std::printf("clock (dependent integer adds): %.2f GHz\n\n| test (per round) | cycles per round | vpdpbusd per cycle |\n|---|---|---|\n", ghz);
  struct Test { const char* what; void (*fn)(long); };
  const Test tests[] = {
      {"12 zmm vpdpbusd", dots_zmm},
      {"12 ymm vpdpbusd", dots_ymm},
      {"12 zmm vpdpbusd + 3 vfmadd231ps", dots_fma3},
      {"12 zmm vpdpbusd + vmulps + vfmadd231ps", dots_mul_fma},
      {"12 zmm vpdpbusd + 3 vpaddd", dots_add3},
      {"12 zmm vpdpbusd + 3 vcvtdq2ps", dots_cvt3},
      {"12 zmm vpdpbusd + 2 vpslld + vpandd", dots_shift_and},
  };
  for (const Test& t : tests) {
    const double cycles = seconds(t.fn, n) / static_cast<double>(n) * ghz * 1e9;
    std::printf("| %s | %.2f | %.2f |\n", t.what, cycles, 12.0 / cycles);
  }
#else
  std::printf("bench_dot_ports: x86-64 only\n");
#endif
  return 0;
}
