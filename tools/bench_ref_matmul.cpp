// Micro-benchmark of the reference matmul over a BF16 weight (decode: one token; prefill:
// a 64-token chunk). Usage: bench_ref_matmul [rows] [cols] [threads]
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/ref_matmul.h"
#include "util/float16.h"

int main(int argc, char** argv) {
  using namespace ringlm;
  const long rows = argc > 1 ? std::atol(argv[1]) : 6144, cols = argc > 2 ? std::atol(argv[2]) : 1536;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::uint16_t> w(rows * cols);
  for (auto& x : w) x = f32_to_bf16(u(rng));
  std::vector<float> in(64 * cols), out(64 * rows);
  for (auto& x : in) x = u(rng);
  kernels::WeightMatrix m{io::DType::BF16, reinterpret_cast<const std::uint8_t*>(w.data()), rows, cols};
  kernels::ParallelFor pool(threads);
  for (int T : {1, 64}) {
    const int reps = T == 1 ? 50 : 5;
    kernels::matmul(m, in.data(), T, out.data(), &pool);
    // Process CPU time, not wall time: the figures stay meaningful on a shared machine.
    const std::clock_t c0 = std::clock();
    for (int r = 0; r < reps; ++r) kernels::matmul(m, in.data(), T, out.data(), &pool);
    double s = double(std::clock() - c0) / CLOCKS_PER_SEC / reps / threads;
    std::printf("(cpu time per thread) T=%2d  %ldx%ld bf16  %.3f ms  %.2f GB/s weights  %.2f GFLOP/s\n", T, rows, cols, s * 1e3,
                rows * cols * 2 / s / 1e9, 2.0 * rows * cols * T / s / 1e9);
  }
}
