// Benchmarks of the GGUF weight paths at Gemma 4 E2B shapes: the ggml-block kernels
// (Q8_0 / Q4_K / Q5_K / Q6_K x int8 activations, ggml_quant_gemm.h) and, for comparison,
// the scalar-dequantizer reference matmul they replace, plus Q4_0 -> q4p16 repack speed and
// the q4p16 kernels. GEMV weights rotate through copies spanning --set-mb (default 512 MB)
// so every call streams from DRAM, like a decode step.
//
//   bench_ggml_kernels [--isa best|all|scalar,avx2,...] [--threads 1,2] [--set-mb 512]
//                      [--min-ms 300] [--types q8_0,q4_k,q5_k,q6_k,q4_0] [--ref]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/dequant_ggml.h"
#include "kernels/dispatch.h"
#include "kernels/ggml_quant_gemm.h"
#include "kernels/ggml_weight_matmul.h"
#include "kernels/q4_gemm.h"
#include "kernels/q4_packed.h"
#include "kernels/q4_weight_matmul.h"
#include "kernels/q4k_packed.h"
#include "kernels/q6k_packed.h"
#include "kernels/q8p16_packed.h"
#include "kernels/ref_matmul.h"
#include "util/float16.h"
#include "bench_common.h"

using namespace ringlm;
using namespace ringlm::kernels;
using Clock = std::chrono::steady_clock;

using ringlm::bench::split;

namespace {

// Valid blocks of `type` with realistic small scales (random bytes elsewhere).
std::vector<std::uint8_t> make_rows(io::DType type, std::size_t rows, std::size_t cols, std::uint64_t seed) {
  std::vector<float> row(cols);
  const std::size_t rb = static_cast<std::size_t>(row_bytes(type, static_cast<std::int64_t>(cols)));
  std::vector<std::uint8_t> out(rows * rb);
  std::uint64_t s = seed | 1;
  // Quantizing every row is slow for big sets: quantize 64 rows, then repeat them.
  const std::size_t distinct = std::min<std::size_t>(rows, 64);
  for (std::size_t r = 0; r < distinct; ++r) {
    for (auto& v : row) {
      s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
      v = static_cast<float>(static_cast<std::int64_t>(s * 0x2545F4914F6CDD1DULL >> 40) - (1 << 23)) * 1e-8f;
    }
    quantize_row(type, row.data(), out.data() + r * rb, static_cast<std::int64_t>(cols));
  }
  for (std::size_t r = distinct; r < rows; ++r) std::memcpy(out.data() + r * rb, out.data() + (r % distinct) * rb, rb);
  return out;
}

template <typename Fn>
std::pair<double, double> time_us(double min_ms, Fn&& fn) {  // best, median
  std::vector<double> t;
  const auto start = Clock::now();
  do {
    const auto a = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
  } while (std::chrono::duration<double, std::milli>(Clock::now() - start).count() < min_ms || t.size() < 5);
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

struct Shape {
  std::size_t rows, cols;
  const char* what;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<Isa> isas = {best_isa()};
  std::vector<std::size_t> threads = {1, 2};
  std::size_t set_mb = 512;
  double min_ms = 300;
  bool ref = false;
  std::vector<std::string> types = {"q8_0", "q4_k", "q5_k", "q6_k", "q4_0"};
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "--ref") { ref = true; continue; }
    if (i + 1 >= argc) { std::fprintf(stderr, "missing value for %s\n", key.c_str()); return 2; }
    const std::string val = argv[++i];
    if (key == "--isa") {
      isas.clear();
      if (val == "all") isas = available_isas();
      else if (val == "best") isas = {best_isa()};
      else for (const auto& n : split(val)) isas.push_back(parse_isa(n));
    } else if (key == "--threads") {
      threads.clear();
      for (const auto& n : split(val)) threads.push_back(std::stoul(n));
    } else if (key == "--set-mb") set_mb = std::stoul(val);
    else if (key == "--min-ms") min_ms = std::stod(val);
    else if (key == "--types") types = split(val);
    else { std::fprintf(stderr, "unknown option %s\n", key.c_str()); return 2; }
  }
  const Shape shapes[] = {{2048, 1536, "q+k+v"}, {6144, 1536, "gate/up"}, {1536, 6144, "down"}, {8960, 1536, "ple proj"}};
  std::vector<ThreadPool*> pools;
  for (std::size_t t : threads) pools.push_back(new ThreadPool(t));
  std::printf("| type | shape | what | path | threads | GEMV us best | median | GB/s best | GEMM-64 ms best | median | GOP/s best |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& tname : types) {
    const io::DType dt = tname == "q8_0" ? io::DType::Q8_0 : tname == "q4_k" ? io::DType::Q4_K
                         : tname == "q5_k" ? io::DType::Q5_K : tname == "q6_k" ? io::DType::Q6_K : io::DType::Q4_0;
    for (const Shape& sh : shapes) {
      const std::size_t rb = static_cast<std::size_t>(row_bytes(dt, static_cast<std::int64_t>(sh.cols)));
      const std::size_t bytes = sh.rows * rb;
      const std::size_t copies = std::max<std::size_t>(1, set_mb * 1000000 / bytes);
      const auto base = make_rows(dt, sh.rows, sh.cols, 42);
      // Q4_0: repack into q4p16 (what the GGUF loader does), timed.
      std::vector<Q4PackedBuffer> packed;
      std::vector<std::vector<std::uint8_t>> sets;
      double repack_us = 0;
      for (std::size_t c = 0; c < copies; ++c) {
        if (dt == io::DType::Q4_0) {
          packed.emplace_back(sh.rows, sh.cols);
          const auto a = Clock::now();
          q4_pack(reinterpret_cast<const BlockQ4_0*>(base.data()), sh.rows, sh.cols, packed.back().data());
          repack_us += std::chrono::duration<double, std::micro>(Clock::now() - a).count();
        } else {
          sets.push_back(base);
        }
      }
      if (dt == io::DType::Q4_0)
        std::printf("<!-- q4_0 %zux%zu repack (q4_pack, 1 thread): %.0f us per matrix, %.2f GB/s -->\n", sh.rows,
                    sh.cols, repack_us / copies, bytes / (repack_us / copies) / 1e3);
      // Q4_K: also repacked into q4kp16 (what the GGUF loader does), timed.
      // Q4_K / Q6_K: also repacked into q4kp16 / q6kp16 (what the GGUF loader does), timed.
      std::vector<Q4PackedBuffer> packed_k;
      const bool k4 = dt == io::DType::Q4_K, k6 = dt == io::DType::Q6_K, k8 = dt == io::DType::Q8_0;
      if (k4 || k6 || k8) {
        double us = 0;
        for (std::size_t c = 0; c < copies; ++c) {
          packed_k.push_back(Q4PackedBuffer::raw(k4   ? q4k_packed_bytes(sh.rows, sh.cols)
                                                 : k6 ? q6k_packed_bytes(sh.rows, sh.cols)
                                                      : q8p16_packed_bytes(sh.rows, sh.cols)));
          const auto a = Clock::now();
          for (std::size_t r = 0; r < sh.rows; ++r) {
            if (k4)
              q4k_pack_row(reinterpret_cast<const BlockQ4_K*>(base.data() + r * rb), r, sh.rows, sh.cols,
                           packed_k.back().data());
            else if (k6)
              q6k_pack_row(reinterpret_cast<const BlockQ6_K*>(base.data() + r * rb), r, sh.rows, sh.cols,
                           packed_k.back().data());
            else
              q8p16_pack_row(reinterpret_cast<const BlockQ8_0*>(base.data() + r * rb), r, sh.rows, sh.cols,
                             packed_k.back().data());
          }
          us += std::chrono::duration<double, std::micro>(Clock::now() - a).count();
        }
        std::printf("<!-- %s %zux%zu repack (1 thread): %.0f us per matrix, %.2f GB/s -->\n", tname.c_str(), sh.rows,
                    sh.cols, us / copies, bytes / (us / copies) / 1e3);
      }
      std::vector<float> x(64 * sh.cols), y(64 * sh.rows);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
      Q8ActBuffer act1, act64;
      for (Isa isa : isas) {
        force_isa(isa);
        quantize_act(x.data(), 1, sh.cols, sh.cols, act1);
        quantize_act(x.data(), 64, sh.cols, sh.cols, act64);
        for (std::size_t ti = 0; ti < threads.size(); ++ti) {
          ThreadPool* pool = pools[ti];
          std::size_t next = 0;
          auto run = [&](const Q8ActView& a) {
            const std::size_t c = next++ % copies;
            if (dt == io::DType::Q4_0)
              q4_matmul(packed[c].view(), a, y.data(), sh.rows, pool);
            else
              ggml_quant_matmul({*ggml_quant_of(dt), sets[c].data(), sh.rows, sh.cols}, a, y.data(), sh.rows, pool);
          };
          const auto gv = time_us(min_ms, [&] { run(act1.view()); });
          const auto gm = time_us(min_ms, [&] { run(act64.view()); });
          std::printf("| %s | %zux%zu | %s | %s | %zu | %.1f | %.1f | %.1f | %.2f | %.2f | %.0f |\n", tname.c_str(),
                      sh.rows, sh.cols, sh.what, isa_name(isa), threads[ti], gv.first, gv.second,
                      bytes / gv.first / 1e3, gm.first / 1e3, gm.second / 1e3,
                      2.0 * 64 * sh.rows * sh.cols / gm.first / 1e3);
          if (!packed_k.empty()) {
            auto run_k = [&](const Q8ActView& a) {
              std::uint8_t* d = packed_k[next++ % copies].data();
              if (k4)
                q4k_matmul(Q4KPacked{d, sh.rows, sh.cols}, a, y.data(), sh.rows, pool);
              else if (k6)
                q6k_matmul(Q6KPacked{d, sh.rows, sh.cols}, a, y.data(), sh.rows, pool);
              else
                q8p16_matmul(Q8P16Packed{d, sh.rows, sh.cols}, a, y.data(), sh.rows, pool);
            };
            const auto kv = time_us(min_ms, [&] { run_k(act1.view()); });
            const auto km = time_us(min_ms, [&] { run_k(act64.view()); });
            std::printf("| %s repacked | %zux%zu | %s | %s | %zu | %.1f | %.1f | %.1f | %.2f | %.2f | %.0f |\n",
                        tname.c_str(), sh.rows, sh.cols, sh.what, isa_name(isa), threads[ti], kv.first, kv.second,
                        bytes / kv.first / 1e3, km.first / 1e3, km.second / 1e3,
                        2.0 * 64 * sh.rows * sh.cols / km.first / 1e3);
          }
          std::fflush(stdout);
        }
      }
      if (ref && dt != io::DType::Q4_0) {  // before: the scalar dequantizer inside the reference matmul
        WeightMatrix w{dt, sets[0].data(), static_cast<std::int64_t>(sh.rows), static_cast<std::int64_t>(sh.cols)};
        w.activations = Q4Activations::f32;
        for (std::size_t ti = 0; ti < threads.size(); ++ti) {
          ParallelFor pf(static_cast<int>(threads[ti]));
          const auto gv = time_us(min_ms, [&] { matmul(w, x.data(), 1, y.data(), &pf); });
          const auto gm = time_us(min_ms, [&] { matmul(w, x.data(), 64, y.data(), &pf); });
          std::printf("| %s | %zux%zu | %s | reference (scalar dequant) | %zu | %.1f | %.1f | %.1f | %.2f | %.2f | %.0f |\n",
                      tname.c_str(), sh.rows, sh.cols, sh.what, threads[ti], gv.first, gv.second,
                      bytes / gv.first / 1e3, gm.first / 1e3, gm.second / 1e3,
                      2.0 * 64 * sh.rows * sh.cols / gm.first / 1e3);
          std::fflush(stdout);
        }
      }
    }
  }
  for (auto* p : pools) delete p;
  return 0;
}
