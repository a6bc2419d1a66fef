// The greedy head (model/greedy_head.h) against the full int8x2 LM head, on a synthetic
// E2B-sized packed q4_0 head (random codes and scales), for n hidden rows at once:
//
//   bench_greedy_head [rows] [cols] [threads] [reps]
//   bench_greedy_head MODEL.gguf [threads] [reps]
//     the model's own head and final-normed hidden rows of real decode steps (a session
//     decoding from an arbitrary prompt), instead of synthetic ones.
//
// Prints, per n in {1, 5, 8, 16}, the median wall time of: the full head (int8x2 matmul and
// soft cap, what a step runs today), the one-plane matmul alone (int8), and the greedy head
// (one-plane matmul + bound + candidates + exact recompute + -inf fill), with the candidate
// counts. Random hidden rows with a few outlier channels (Gemma-like).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/q4_packed.h"
#include "kernels/ref_matmul.h"
#include "kernels/ref_ops.h"
#include "model/gguf_model.h"
#include "model/greedy_head.h"
#include "model/model.h"
#include "util/float16.h"

using namespace ringlm;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const bool real = argc > 1 && std::string(argv[1]).ends_with(".gguf");
  std::size_t rows = !real && argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 262144;
  std::size_t cols = !real && argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1536;
  const int ti = real ? 2 : 3;  // argv index of [threads]; [reps] follows
  const int threads = argc > ti ? std::atoi(argv[ti]) : 2;
  const int reps = argc > ti + 1 ? std::atoi(argv[ti + 1]) : 7;
  std::shared_ptr<const model::Model> m;
  std::vector<float> real_rows;  // [64][cols]: final-normed rows of 64 decode steps
  if (real) {
    m = model::load_gguf_model(argv[1], {.threads = threads});
    rows = static_cast<std::size_t>(m->weights().lm_head.rows);
    cols = static_cast<std::size_t>(m->weights().lm_head.cols);
    model::Session s(m);
    for (int i = 0; i < 64; ++i) {
      s.decode_hidden(300 + (i * 37) % 5000, i);
      const auto hin = s.head_input();
      real_rows.insert(real_rows.end(), hin.begin(), hin.end());
    }
  }
  kernels::Q4PackedBuffer buf(real ? 16 : rows, cols);
  if (!real) {
    std::mt19937_64 rng(1);
    const kernels::Q4Packed v = buf.view();
    for (std::size_t g = 0; g < v.groups(); ++g) {
      std::uint8_t* codes = buf.data() + g * kernels::Q4Packed::group_bytes(cols);
      for (std::size_t i = 0; i < cols / 32 * 256; i += 8) {
        const std::uint64_t r = rng();
        std::copy_n(reinterpret_cast<const std::uint8_t*>(&r), 8, codes + i);
      }
      auto* scales = reinterpret_cast<std::uint16_t*>(codes + cols / 32 * 256);
      for (std::size_t i = 0; i < cols / 32 * 16; ++i)
        scales[i] = f32_to_fp16(0.002f + 0.004f * static_cast<float>(rng() % 1000) / 1000.0f);
    }
  }
  kernels::WeightMatrix w;
  w.dtype = io::DType::Q4_0;
  w.data = buf.data();
  w.rows = static_cast<std::int64_t>(rows);
  w.cols = static_cast<std::int64_t>(cols);
  w.packed = true;
  w.activations = kernels::Q4Activations::int8x2;
  if (real) w = m->weights().lm_head;
  kernels::WeightMatrix one = w;
  one.activations = kernels::Q4Activations::int8;
  kernels::ParallelFor pool(threads);
  const auto t0 = Clock::now();
  const model::GreedyHeadBounds bounds = model::make_greedy_head_bounds(w, &pool);
  std::printf("head %zu x %zu, %d threads; weight bounds %.3f s\n", rows, cols, threads,
              std::chrono::duration<double>(Clock::now() - t0).count());
  const float cap = real ? static_cast<float>(m->config().final_logit_softcapping) : 30.0f;
  model::GreedyHead greedy(w, cap, bounds, 16);
  int pick = 0;
  std::mt19937 rng(2);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  for (int n : {1, 5, 8, 16}) {
    std::vector<float> h(static_cast<std::size_t>(n) * cols), out(static_cast<std::size_t>(n) * rows);
    auto median = [&](auto&& fn) {
      std::vector<double> t;
      for (int r = 0; r < reps; ++r) {
        if (real) {
          for (int i = 0; i < n; ++i, pick = (pick + 1) % 64)
            std::copy_n(real_rows.data() + static_cast<std::size_t>(pick) * cols, cols, h.data() + static_cast<std::size_t>(i) * cols);
        } else {
          for (float& x : h) x = n01(rng);
          for (int i = 0; i < n; ++i) h[static_cast<std::size_t>(i) * cols + (static_cast<std::size_t>(i) * 97) % cols] *= 80.0f;
        }
        const auto a = Clock::now();
        fn();
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
      }
      std::sort(t.begin(), t.end());
      return t[t.size() / 2];
    };
    const double full = median([&] {
      kernels::matmul(w, h.data(), n, out.data(), &pool);
      if (cap > 0) kernels::soft_cap(out.data(), static_cast<std::int64_t>(out.size()), cap, &pool);
    });
    const double plane = median([&] { kernels::matmul(one, h.data(), n, out.data(), &pool); });
    const model::GreedyHead::Stats before = greedy.stats();
    const double g = median([&] { greedy.run(h.data(), n, out.data(), &pool); });
    const model::GreedyHead::Stats& s = greedy.stats();
    const double exact = static_cast<double>((s.rows - s.fallback_rows) - (before.rows - before.fallback_rows));
    std::printf("n=%2d  full int8x2 head %7.2f ms  one-plane matmul %7.2f ms  greedy head %7.2f ms (%.2fx full)"
                "  candidates/row %.1f, fallbacks %llu\n",
                n, full, plane, g, g / full, exact > 0 ? static_cast<double>(s.candidates - before.candidates) / exact : 0.0,
                static_cast<unsigned long long>(s.fallback_rows - before.fallback_rows));
  }
  return 0;
}
