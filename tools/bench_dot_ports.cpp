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
alignas(64) int g_act[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
// Twelve dots each with its own vpbroadcastd from memory (what GCC makes of the tile), and
// the same plus 6 more broadcast loads: do the vector loads, not the dots, bound the tile?
#define RINGLM_B1(i) "vpbroadcastd " #i "*4(%0), %%zmm" #i "\n\t"
#define RINGLM_B1D(i) RINGLM_B1(i) "vpdpbusd %%zmm" #i ", %%zmm31, %%zmm" #i "\n\t"
void dots_zmm_bcast_each(long n) {
  for (long i = 0; i < n; ++i)
    __asm__ volatile(RINGLM_B1D(0) RINGLM_B1D(1) RINGLM_B1D(2) RINGLM_B1D(3) RINGLM_B1D(4) RINGLM_B1D(5) RINGLM_B1D(6)
                         RINGLM_B1D(7) RINGLM_B1D(8) RINGLM_B1D(9) RINGLM_B1D(10) RINGLM_B1D(11) ::"r"(g_act)
                     : RINGLM_CLOBBER, "memory");
}
void dots_zmm_bcast_each_more(long n) {
  for (long i = 0; i < n; ++i)
    __asm__ volatile(RINGLM_B1D(0) RINGLM_B1D(1) RINGLM_B1D(2) RINGLM_B1D(3) RINGLM_B1D(4) RINGLM_B1D(5) RINGLM_B1D(6)
                         RINGLM_B1D(7) RINGLM_B1D(8) RINGLM_B1D(9) RINGLM_B1D(10) RINGLM_B1D(11)
                         "vpbroadcastd 4(%0), %%zmm12\n\tvpbroadcastd 8(%0), %%zmm13\n\tvpbroadcastd 12(%0), %%zmm14\n\t"
                         "vpbroadcastd 16(%0), %%zmm12\n\tvpbroadcastd 20(%0), %%zmm13\n\tvpbroadcastd 24(%0), %%zmm14\n\t"
                         ::"r"(g_act)
                     : RINGLM_CLOBBER, "memory");
}
// The tile's form: each dot reads its activation bytes as a {1to16} broadcast memory operand.
#define RINGLM_DM(i) "vpdpbusd " #i "*4(%0)%{1to16%}, %%zmm31, %%zmm" #i "\n\t"
#define RINGLM_DM12                                                                                   \
  RINGLM_DM(0) RINGLM_DM(1) RINGLM_DM(2) RINGLM_DM(3) RINGLM_DM(4) RINGLM_DM(5) RINGLM_DM(6) RINGLM_DM(7) \
      RINGLM_DM(8) RINGLM_DM(9) RINGLM_DM(10) RINGLM_DM(11)
void dots_zmm_bcast_mem(long n) {
  for (long i = 0; i < n; ++i) __asm__ volatile(RINGLM_DM12 ::"r"(g_act) : RINGLM_CLOBBER, "memory");
}
// A broadcast loaded once into a register (vpbroadcastd from memory) feeding two dots each:
// the shape of a two-group form that shares each activation broadcast.
#define RINGLM_BD(i, a, b) "vpbroadcastd " #i "*4(%0), %%zmm30\n\t" \
  "vpdpbusd %%zmm30, %%zmm31, %%zmm" #a "\n\tvpdpbusd %%zmm30, %%zmm29, %%zmm" #b "\n\t"
void dots_zmm_bcast_reg(long n) {
  for (long i = 0; i < n; ++i)
    __asm__ volatile(RINGLM_BD(0, 0, 1) RINGLM_BD(1, 2, 3) RINGLM_BD(2, 4, 5) RINGLM_BD(3, 6, 7) RINGLM_BD(4, 8, 9)
                         RINGLM_BD(5, 10, 11) ::"r"(g_act)
                     : RINGLM_CLOBBER, "memory");
}
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
      {"12 zmm vpdpbusd, {1to16} memory operand", dots_zmm_bcast_mem},
      {"12 zmm vpdpbusd + 6 vpbroadcastd from memory", dots_zmm_bcast_reg},
      {"12 zmm vpdpbusd, each after its own vpbroadcastd from memory", dots_zmm_bcast_each},
      {"12 zmm vpdpbusd + 18 vpbroadcastd from memory", dots_zmm_bcast_each_more},
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
