// Kernel benchmarks: memory read bandwidth, w4a8 GEMV at Gemma 4 E2B shapes, 64-row GEMM,
// and the LM head (int8 rows x f32 / x q8, and q4_0), per ISA path and thread count.
// GEMV weights rotate through copies spanning --set-mb (default 1024 MB, well above the
// L3), so the figures are DRAM-bound like a real decode step, not cache-resident.
//
//   bench_kernels [--isa all|scalar,avx2,...] [--threads 1,2] [--set-mb 1024] [--min-ms 300]
//                 [--only bw,pool,gemv,gemm,lmhead,lmacc,quant] [--act int8|int8x2]
//                 [--gemm-rows 64[,2,4,8,16]] [--gemm-weights cache|dram] [--huge 1|0] [--prefill-gemm 1|0]
// --gemm-weights dram: the GEMM's weights rotate over --set-mb like the GEMV's (a batched decode step
// streams them from DRAM); without it one copy is reused (cache-resident, the dot-port bound).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/dispatch.h"
#include "kernels/mem_read.h"
#include "kernels/q4_gemm.h"
#include "util/float16.h"
#include "bench_common.h"

using namespace ringlm::kernels;

using ringlm::bench::split;
using ringlm::bench::time_calls;
using ringlm::bench::Timing;

namespace {

struct Options {
  std::vector<Isa> isas;
  std::vector<std::size_t> threads = {1, 2};
  std::size_t set_mb = 1024;
  double min_ms = 300;
  std::vector<std::string> only = {"bw", "pool", "gemv", "gemm", "lmhead", "lmacc", "quant"};
  bool huge = true;         // --huge 0: weights in plain heap memory instead of huge pages
  bool two_planes = false;  // --act int8x2: two-plane activations for the q4 kernels
  std::vector<std::size_t> gemm_rows = {64};  // --gemm-rows: activation rows of the GEMM section
  bool gemm_dram = false;                      // --gemm-weights dram: rotate the GEMM's weights over set_mb
  bool wants(const char* what) const { return std::find(only.begin(), only.end(), what) != only.end(); }
};

// Cheap deterministic fill (xorshift64*).
void fill_random(std::uint8_t* p, std::size_t n, std::uint64_t seed) {
  std::uint64_t s = seed | 1;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    const std::uint64_t v = s * 0x2545F4914F6CDD1DULL;
    std::memcpy(p + i, &v, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<std::uint8_t>(i);
}

// The weights' memory. huge = true: the same anonymous huge-page memory the model's packed
// weights live in (kernels::Q4PackedBuffer), so the GEMV figures match decode's page size;
// false (--huge 0): plain heap memory (4 KiB pages under THP "madvise").
struct Arena {
  std::unique_ptr<std::uint8_t[]> bytes;
  Q4PackedBuffer huge_bytes;
  std::size_t size = 0;
  Arena(std::size_t n, bool huge) : size(n) {
    if (huge) huge_bytes = Q4PackedBuffer::raw(n + 64);
    else bytes.reset(new std::uint8_t[n + 64]);
    fill_random(data(), n, 42);
  }
  std::uint8_t* data() {
    std::uint8_t* base = bytes ? bytes.get() : huge_bytes.data();
    return reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(base) + 63) & ~std::uintptr_t(63));
  }
};

// Lays `copies` packed [rows, cols] matrices into the arena with sane fp16 scales.
std::vector<Q4Packed> q4_copies(Arena& arena, std::size_t rows, std::size_t cols, std::size_t max_bytes) {
  const std::size_t bytes = q4_packed_bytes(rows, cols);
  const std::size_t copies = std::max<std::size_t>(1, std::min(max_bytes, arena.size) / bytes);
  std::vector<Q4Packed> out;
  for (std::size_t c = 0; c < copies; ++c) {
    Q4Packed w{arena.data() + c * bytes, rows, cols};
    for (std::size_t g = 0; g < w.groups(); ++g) {
      auto* s = const_cast<std::uint16_t*>(w.group_scales(g));
      for (std::size_t i = 0; i < w.blocks_per_row() * kQ4GroupRows; ++i)
        s[i] = ringlm::f32_to_fp16(0.001f * float(1 + (i * 7 + g) % 13));
    }
    out.push_back(w);
  }
  return out;
}


}  // namespace

int main(int argc, char** argv) {
  Options opt;
  opt.isas = available_isas();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], val = argv[i + 1];
    if (key == "--isa") {
      if (val != "all") {
        opt.isas.clear();
        for (const auto& s : split(val)) opt.isas.push_back(parse_isa(s));
      }
    } else if (key == "--threads") {
      opt.threads.clear();
      for (const auto& s : split(val)) opt.threads.push_back(std::stoul(s));
    } else if (key == "--set-mb") {
      opt.set_mb = std::stoul(val);
    } else if (key == "--min-ms") {
      opt.min_ms = std::stod(val);
    } else if (key == "--act") {
      if (val != "int8" && val != "int8x2") {
        std::fprintf(stderr, "--act: int8 or int8x2\n");
        return 2;
      }
      opt.two_planes = val == "int8x2";
    } else if (key == "--gemm-weights") {
      if (val != "cache" && val != "dram") {
        std::fprintf(stderr, "--gemm-weights: cache or dram\n");
        return 2;
      }
      opt.gemm_dram = val == "dram";
    } else if (key == "--gemm-rows") {
      opt.gemm_rows.clear();
      for (const auto& s : split(val)) opt.gemm_rows.push_back(std::stoul(s));
    } else if (key == "--huge") {
      opt.huge = val != "0";
    } else if (key == "--only") {
      opt.only = split(val);
    } else if (key == "--prefill-gemm") {  // 1: q4_prefill_vnni_impl.h for 17+ rows (default 0: the multi-row tile)
      set_q4_prefill_gemm(val != "0");
    } else {
      std::fprintf(stderr, "unknown option %s\n", key.c_str());
      return 2;
    }
  }
  std::printf("cpu features: %s; activations: %s; paths: ", cpu_features().describe().c_str(),
              opt.two_planes ? "int8x2 (two planes)" : "int8");
  for (Isa isa : opt.isas) std::printf("%s ", isa_name(isa));
  std::printf("\n");

  const std::size_t lm_rows = 262144, lm_cols = 1536;
  const std::size_t arena_bytes = std::max<std::size_t>(opt.set_mb << 20, lm_rows * lm_cols + (1u << 20));
  Arena arena(arena_bytes, opt.huge);
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (std::size_t t : opt.threads) pools.push_back(t > 1 ? std::make_unique<ThreadPool>(t) : nullptr);

  if (opt.wants("bw")) {
    const std::size_t piece = 64u << 20, pieces = std::max<std::size_t>(1, (opt.set_mb << 20) / piece);
    std::printf("\n## Memory read bandwidth (64 MB reads rotating over %zu MB)\n\n"
                "| threads | GB/s best | GB/s median |\n|---|---|---|\n", opt.set_mb);
    for (std::size_t ti = 0; ti < opt.threads.size(); ++ti) {
      volatile std::uint64_t sink = 0;
      const Timing s = time_calls(opt.min_ms, [&](std::size_t c) {
        const std::uint8_t* base = arena.data() + (c % pieces) * piece;
        if (pools[ti] == nullptr) {
          sink = sink ^ mem_read_checksum(base, piece);
          return;
        }
        pools[ti]->parallel_for(opt.threads[ti], [&](std::size_t b, std::size_t e, std::size_t) {
          const std::size_t chunk = piece / opt.threads[ti];
          for (std::size_t p = b; p < e; ++p) sink = sink ^ mem_read_checksum(base + p * chunk, chunk);
        });
      });
      std::printf("| %zu | %.1f | %.1f |\n", opt.threads[ti], double(piece) / s.best / 1e9, double(piece) / s.median / 1e9);
    }
  }

  if (opt.wants("pool")) {
    std::printf("\n## Thread pool: empty parallel_for round trip\n\n| threads | us best | us median |\n|---|---|---|\n");
    for (std::size_t ti = 0; ti < opt.threads.size(); ++ti) {
      if (pools[ti] == nullptr) continue;
      volatile int sink = 0;
      const Timing s = time_calls(std::min(opt.min_ms, 100.0), [&](std::size_t) {
        pools[ti]->parallel_for(opt.threads[ti], [&](std::size_t, std::size_t, std::size_t) { sink = 1; });
      });
      std::printf("| %zu | %.2f | %.2f |\n", opt.threads[ti], s.best * 1e6, s.median * 1e6);
    }
  }

  struct Shape { std::size_t out, in; const char* what; };
  const std::vector<Shape> shapes = {{2048, 1536, "q+k+v proj (1536->2048)"}, {6144, 1536, "gate/up (1536->6144)"},
                                     {1536, 6144, "down (6144->1536)"},        {1536, 12288, "down, wide MLP (12288->1536)"},
                                     {8960, 1536, "per-layer proj (1536->8960)"}};

  if (opt.wants("gemv")) {
    std::printf("\n## GEMV (1 token, w4a8, weights from DRAM: rotating over %zu MB)\n\n", opt.set_mb);
    std::printf("| shape | path | threads | us/call best | us/call median | GB/s best | GB/s median |\n|---|---|---|---|---|---|---|\n");
    for (const Shape& sh : shapes) {
      auto copies = q4_copies(arena, sh.out, sh.in, opt.set_mb << 20);
      std::vector<float> x(sh.in), y(sh.out);
      for (std::size_t k = 0; k < sh.in; ++k) x[k] = float((k * 37) % 19) - 9.0f;
      for (Isa isa : opt.isas) {
        force_isa(isa);
        Q8ActBuffer act;
        quantize_act(x.data(), 1, sh.in, sh.in, act, opt.two_planes);
        for (std::size_t ti = 0; ti < opt.threads.size(); ++ti) {
          const Timing s = time_calls(opt.min_ms, [&](std::size_t c) {
            q4_matmul(copies[c % copies.size()], act.view(), y.data(), sh.out, pools[ti].get());
          });
          const double b = double(copies[0].bytes());
          std::printf("| %s | %s | %zu | %.1f | %.1f | %.1f | %.1f |\n", sh.what, isa_name(isa), opt.threads[ti],
                      s.best * 1e6, s.median * 1e6, b / s.best / 1e9, b / s.median / 1e9);
          std::fflush(stdout);
        }
      }
    }
  }

  if (opt.wants("gemm")) {
    std::printf("\n## GEMM (w4a8; 64 rows = a prefill chunk, 2-16 = a batched decode step; weights %s)\n\n| shape | rows | path | threads | ms/call best | ms/call median | GOP/s best (2*M*N*K) |\n|---|---|---|---|---|---|---|\n", opt.gemm_dram ? "from DRAM" : "cache-resident");
    for (const std::size_t M : opt.gemm_rows) {
      for (const Shape& sh : shapes) {
        auto copies = q4_copies(arena, sh.out, sh.in, opt.gemm_dram ? opt.set_mb << 20 : 1);
        std::vector<float> x(M * sh.in), y(M * sh.out);
        for (std::size_t k = 0; k < x.size(); ++k) x[k] = float((k * 37) % 19) - 9.0f;
        for (Isa isa : opt.isas) {
          if (isa == Isa::scalar) continue;  // minutes at this size; the tests cover it
          force_isa(isa);
          Q8ActBuffer act;
          quantize_act(x.data(), M, sh.in, sh.in, act, opt.two_planes);
          for (std::size_t ti = 0; ti < opt.threads.size(); ++ti) {
            const Timing s = time_calls(opt.min_ms, [&](std::size_t c) {
              q4_matmul(copies[c % copies.size()], act.view(), y.data(), sh.out, pools[ti].get());
            });
            std::printf("| %s | %zu | %s | %zu | %.3f | %.3f | %.1f |\n", sh.what, M, isa_name(isa), opt.threads[ti],
                        s.best * 1e3, s.median * 1e3, 2.0 * M * sh.out * sh.in / s.best / 1e9);
            std::fflush(stdout);
          }
        }
      }
    }
  }

  if (opt.wants("lmhead")) {
    // Timed in slices of 8192 rows (consecutive, wrapping) so a single call rarely spans a
    // scheduler slice of another tenant; the full-head figure is the per-slice time x 32.
    const std::size_t slice = 8192, nslices = lm_rows / slice;
    std::printf("\n## LM head (262144 x 1536, one position; timed in %zu slices of %zu rows)\n\n"
                "| variant | bytes | path | threads | ms/head best | ms/head median | GB/s best | GB/s median |\n"
                "|---|---|---|---|---|---|---|---|\n", nslices, slice);
    const std::int8_t* w8 = reinterpret_cast<const std::int8_t*>(arena.data());
    std::vector<float> scale(lm_rows, 0.01f), x(lm_cols), y(lm_rows);
    for (std::size_t k = 0; k < lm_cols; ++k) x[k] = float((k * 37) % 19) - 9.0f;
    auto report = [&](const char* variant, double bytes, Isa isa, std::size_t threads, Timing s) {
      const double best = s.best * nslices, median = s.median * nslices;
      std::printf("| %s | %.0f MB | %s | %zu | %.2f | %.2f | %.1f | %.1f |\n", variant, bytes / 1e6, isa_name(isa),
                  threads, best * 1e3, median * 1e3, bytes / best / 1e9, bytes / median / 1e9);
      std::fflush(stdout);
    };
    const double bytes8 = double(lm_rows) * lm_cols;
    for (Isa isa : opt.isas) {
      force_isa(isa);
      Q8ActBuffer act;
      quantize_act(x.data(), 1, lm_cols, lm_cols, act);
      for (std::size_t ti = 0; ti < opt.threads.size(); ++ti) {
        Timing s = time_calls(opt.min_ms, [&](std::size_t c) {
          const std::size_t r0 = (c % nslices) * slice;
          i8_gemv_f32(w8 + r0 * lm_cols, scale.data() + r0, slice, lm_cols, x.data(), y.data() + r0, pools[ti].get());
        });
        report("int8 rows x f32", bytes8, isa, opt.threads[ti], s);
        s = time_calls(opt.min_ms, [&](std::size_t c) {
          const std::size_t r0 = (c % nslices) * slice;
          i8_gemv_q8(w8 + r0 * lm_cols, scale.data() + r0, slice, lm_cols, act.view(), y.data() + r0, pools[ti].get());
        });
        report("int8 rows x q8", bytes8, isa, opt.threads[ti], s);
      }
    }
    auto q4 = q4_copies(arena, lm_rows, lm_cols, 1);
    for (Isa isa : opt.isas) {
      force_isa(isa);
      Q8ActBuffer act;
      quantize_act(x.data(), 1, lm_cols, lm_cols, act, opt.two_planes);
      for (std::size_t ti = 0; ti < opt.threads.size(); ++ti) {
        const Timing s = time_calls(opt.min_ms, [&](std::size_t c) {
          const std::size_t r0 = (c % nslices) * slice;
          const Q4Packed part{q4[0].group_codes(r0 / kQ4GroupRows), slice, lm_cols};
          q4_matmul(part, act.view(), y.data() + r0, slice, pools[ti].get());
        });
        report("q4_0 (packed) x q8", double(q4[0].bytes()), isa, opt.threads[ti], s);
      }
    }
  }

  if (opt.wants("lmacc")) {
    // Accuracy of the LM-head variants on a Gaussian stand-in for the tied embedding
    // (4096 rows, per-row std varying 0.01..0.05) against float64 logits from the f32 rows.
    const std::size_t rows = 4096, cols = lm_cols;
    std::vector<float> wf(rows * cols), x(cols);
    std::uint64_t st = 88172645463325252ULL;
    auto gauss = [&] {  // Box-Muller on xorshift
      auto u = [&] { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return (double(st >> 11) + 0.5) / 9007199254740992.0; };
      return float(std::sqrt(-2.0 * std::log(u())) * std::cos(6.283185307179586 * u()));
    };
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t k = 0; k < cols; ++k) wf[r * cols + k] = (0.01f + 0.04f * float(r % 17) / 16.0f) * gauss();
    for (auto& v : x) v = gauss() * (1.0f + 3.0f * (std::fabs(gauss()) > 2.5f));  // a few outlier channels
    std::vector<double> ref(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      double a = 0;
      for (std::size_t k = 0; k < cols; ++k) a += double(wf[r * cols + k]) * x[k];
      ref[r] = a;
    }
    std::vector<std::int8_t> w8(rows * cols);
    std::vector<float> sc(rows);
    for (std::size_t r = 0; r < rows; ++r) sc[r] = quantize_row_i8(wf.data() + r * cols, w8.data() + r * cols, cols);
    Q4PackedBuffer q4(rows, cols);
    q4_quantize_pack(wf.data(), rows, cols, q4.data());
    Q8ActBuffer act;
    quantize_act(x.data(), 1, cols, cols, act);
    std::printf("\n## LM head accuracy (Gaussian rows, 4096 x 1536, vs float64 on the f32 rows)\n\n"
                "| variant | rel. RMS error | max abs error / RMS logit |\n|---|---|---|\n");
    auto stats = [&](const char* variant, const std::vector<float>& y) {
      double se = 0, sr = 0, mx = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        se += (y[r] - ref[r]) * (y[r] - ref[r]);
        sr += ref[r] * ref[r];
        mx = std::max(mx, std::fabs(y[r] - ref[r]));
      }
      std::printf("| %s | %.2e | %.2e |\n", variant, std::sqrt(se / sr), mx / std::sqrt(sr / rows));
    };
    std::vector<float> y(rows);
    i8_gemv_f32(w8.data(), sc.data(), rows, cols, x.data(), y.data(), nullptr);
    stats("int8 rows x f32", y);
    i8_gemv_q8(w8.data(), sc.data(), rows, cols, act.view(), y.data(), nullptr);
    stats("int8 rows x q8", y);
    q4_matmul(q4.view(), act.view(), y.data(), rows, nullptr);
    stats("q4_0 x q8", y);
  }

  if (opt.wants("quant")) {
    std::printf("\n## Activation quantizer f32 -> q8\n\n| cols x rows | path | us/call best |\n|---|---|---|\n");
    for (std::size_t rows : {1, 64}) {
      const std::size_t cols = 1536;
      std::vector<float> x(rows * cols);
      for (std::size_t k = 0; k < x.size(); ++k) x[k] = float((k * 37) % 19) - 9.0f;
      for (Isa isa : opt.isas) {
        force_isa(isa);
        Q8ActBuffer act;
        const Timing s = time_calls(std::min(opt.min_ms, 100.0), [&](std::size_t) { quantize_act(x.data(), rows, cols, cols, act); });
        std::printf("| %zu x %zu | %s | %.2f |\n", cols, rows, isa_name(isa), s.best * 1e6);
      }
    }
  }
  return 0;
}
