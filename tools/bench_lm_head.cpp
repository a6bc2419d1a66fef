// Where the subset LM head stops paying (model::Session::head_logits_rows vs head_logits),
// and what it saves in guided decoding.
//
//   bench_lm_head head MODEL_DIR [stored|q4_0] [threads]
//     one decode step's hidden state, then the head for k allowed rows (spread at random over
//     the vocabulary, or one contiguous run) against the full head; median wall time.
//   bench_lm_head synthetic [rows] [cols] [threads]
//     the same for a random BF16 and q4_0 head of the given size (default E2B's 262144 x
//     1536), without building a model.
//   bench_lm_head guided MODEL_DIR SCHEMA_FILE [stored|q4_0] [threads] [runs]
//     guided generations (greedy, then seeded T=1) with the subset head never / auto: time
//     per generated token and per sampled step after the first (wall), process CPU time per
//     sampled step over the whole generation, and the share of subset steps.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "kernels/dequant_ggml.h"
#include "kernels/q4_packed.h"
#include "kernels/ref_ops.h"
#include "model/lm_head.h"
#include "util/float16.h"
#include "model/gguf_model.h"
#include "util/error.h"

using namespace ringlm;
using Clock = std::chrono::steady_clock;

namespace {

template <typename F>
double median_us(int reps, F&& f) {
  std::vector<double> t(reps);
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    t[r] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
  std::sort(t.begin(), t.end());
  return t[reps / 2];
}

model::WeightFormat parse_format(const char* s) {
  return s && std::string(s) == "q4_0" ? model::WeightFormat::q4_0 : model::WeightFormat::stored;
}

int bench_head(int argc, char** argv) {
  const auto format = parse_format(argc > 3 ? argv[3] : nullptr);
  const int threads = argc > 4 ? std::atoi(argv[4]) : 0;
  auto m = model::load_model_any(argv[2], {.threads = threads, .weights = format});
  model::Session s(m, {.context_tokens = 64});
  const int V = m->config().vocab_size;
  s.reserve_head_rows(V);
  s.decode_hidden(2, 0);
  const int reps = 21;
  const double full = median_us(reps, [&] { s.head_logits(); });
  std::printf("vocab %d, hidden %d, head %s, granularity %zu; full head %.1f us\n", V, m->config().hidden_size,
              io::dtype_name(m->weights().lm_head.dtype), s.head_row_granularity(), full);
  std::printf("%8s %7s %12s %8s %12s %8s\n", "rows", "share", "spread us", "x full", "run us", "x full");
  std::mt19937 rng(1);
  std::vector<std::int32_t> all(V);
  std::iota(all.begin(), all.end(), 0);
  for (int k : {1, 8, 64, 256, 1024, 4096, 16384, 32768, 65536, 98304, 131072, 196608, 262144}) {
    if (k > V) break;
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<std::int32_t> spread(all.begin(), all.begin() + k);
    std::sort(spread.begin(), spread.end());  // as the generator lists them
    std::vector<std::int32_t> run(k);
    std::iota(run.begin(), run.end(), (V - k) / 2);
    const double a = median_us(reps, [&] { s.head_logits_rows(spread); });
    const double b = median_us(reps, [&] { s.head_logits_rows(run); });
    std::printf("%8d %6.2f%% %12.1f %8.2f %12.1f %8.2f\n", k, 100.0 * k / V, a, a / full, b, b / full);
  }
  // Measured again: on a shared machine the load drifts during the sweep.
  std::printf("full head again: %.1f us\n", median_us(reps, [&] { s.head_logits(); }));
  return 0;
}

// A random [rows, cols] head as BF16 rows and as packed q4_0, without a model: the full
// head (matmul + soft cap, as Session runs it) against LmHeadRows for k allowed rows.
int bench_synthetic(int argc, char** argv) {
  const std::int64_t rows = argc > 2 ? std::atol(argv[2]) : 262144, cols = argc > 3 ? std::atol(argv[3]) : 1536;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 1;
  const float cap = 30.0f;
  std::mt19937_64 rng(3);
  std::vector<float> row(cols), h(cols);
  std::vector<std::uint16_t> bf16(static_cast<std::size_t>(rows * cols));
  kernels::Q4PackedBuffer packed(rows, cols);
  std::vector<kernels::BlockQ4_0> blocks(cols / kernels::kQBlock);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      row[c] = (static_cast<float>(rng() >> 40) / 16777216.0f - 0.5f) * 0.1f;
      bf16[r * cols + c] = f32_to_bf16(row[c]);
    }
    kernels::quantize_row_q4_0(row.data(), blocks.data(), cols);
    kernels::q4_pack_row(blocks.data(), r, rows, cols, packed.data());
  }
  for (auto& x : h) x = static_cast<float>(rng() >> 40) / 16777216.0f - 0.5f;
  kernels::ParallelFor pool(threads);
  std::vector<float> logits(rows), values(rows);
  const int reps = 9;
  std::printf("synthetic head %ld x %ld, %d thread(s)\n", static_cast<long>(rows), static_cast<long>(cols), threads);
  const kernels::WeightMatrix kinds[] = {
      {io::DType::BF16, reinterpret_cast<const std::uint8_t*>(bf16.data()), rows, cols},
      {io::DType::Q4_0, packed.view().data, rows, cols, true}};
  for (const auto& w : kinds) {
    model::LmHeadRows sub(w, cap);
    const double full = median_us(reps, [&] {
      kernels::matmul(w, h.data(), 1, logits.data(), &pool);
      kernels::soft_cap(logits.data(), rows, cap);
    });
    std::printf("%s: full head %.1f us, granularity %zu\n", io::dtype_name(w.dtype), full, sub.granularity());
    std::printf("%8s %7s %12s %8s %12s %8s\n", "rows", "share", "spread us", "x full", "run us", "x full");
    std::vector<std::int32_t> all(rows);
    std::iota(all.begin(), all.end(), 0);
    std::mt19937 pick(1);
    for (std::int64_t k : {1, 16, 64, 256, 1024, 4096, 16384, 32768, 65536, 131072, 196608, 262144}) {
      if (k > rows) break;
      std::shuffle(all.begin(), all.end(), pick);
      std::vector<std::int32_t> spread(all.begin(), all.begin() + k);
      std::sort(spread.begin(), spread.end());
      std::vector<std::int32_t> run(k);
      std::iota(run.begin(), run.end(), static_cast<std::int32_t>((rows - k) / 2));
      const double a = median_us(reps, [&] { sub.compute(h.data(), spread, values.data(), logits.data(), &pool); });
      const double b = median_us(reps, [&] { sub.compute(h.data(), run, values.data(), logits.data(), &pool); });
      std::printf("%8ld %6.2f%% %12.1f %8.2f %12.1f %8.2f\n", static_cast<long>(k), 100.0 * k / rows, a, a / full, b,
                  b / full);
    }
  }
  return 0;
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  if (!in) fail("cannot read ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int bench_guided(int argc, char** argv) {
  if (argc < 4) fail("usage: bench_lm_head guided MODEL_DIR SCHEMA_FILE [stored|q4_0] [threads] [runs]");
  const auto format = parse_format(argc > 4 ? argv[4] : nullptr);
  const int threads = argc > 5 ? std::atoi(argv[5]) : 0;
  const int runs = argc > 6 ? std::atoi(argv[6]) : 3;
  engine::Engine e({.model_dir = argv[2], .context_tokens = 1024, .threads = threads, .weights = format});
  engine::Generator g(e);
  const std::string schema = read_file(argv[3]);
  chat::ChatRequest req;
  req.messages.push_back({{"role", "user"}, {"content", "Describe a product as JSON."}});
  req.add_generation_prompt = true;
  const auto prompt = e.encode_chat(req);
  std::printf("model %s (%s), %zu prompt tokens\n", argv[2], format == model::WeightFormat::q4_0 ? "q4_0" : "stored",
              prompt.size());
  std::printf("%-6s %-6s %7s %7s %9s %12s %12s %12s\n", "T", "head", "tokens", "steps", "subset", "ms/token", "ms/step",
              "cpu ms/step");
  for (float temperature : {0.0f, 1.0f}) {
    for (auto mode : {engine::HeadSubsetPolicy::Mode::Never, engine::HeadSubsetPolicy::Mode::Auto}) {
      g.set_head_subset({.mode = mode});
      std::vector<double> per_token, per_step, cpu_per_step;
      engine::GenerationResult r;
      for (int i = 0; i < runs; ++i) {
        engine::GenerationParams p;
        p.max_tokens = 400;
        p.json_schema = schema;
        p.sampling.temperature = temperature;
        p.sampling.seed = 7;
        g.reset();  // the prompt is prefilled again each run (not in the figures: after TTFT)
        const std::clock_t c0 = std::clock();
        r = g.generate(prompt, p, nullptr);
        // Process CPU time (all threads) of the whole generation, prompt included: steadier
        // than wall time on a shared machine; the prompt part is the same in both modes.
        cpu_per_step.push_back(double(std::clock() - c0) / CLOCKS_PER_SEC * 1e3 / std::max(1, r.guided_steps));
        const double decode_s = r.total_s - r.ttft_s;
        per_token.push_back(decode_s * 1e3 / std::max(1, r.completion_tokens - 1));
        per_step.push_back(decode_s * 1e3 / std::max(1, r.guided_steps - 1));
      }
      std::sort(per_token.begin(), per_token.end());
      std::sort(per_step.begin(), per_step.end());
      std::sort(cpu_per_step.begin(), cpu_per_step.end());
      std::printf("%-6.1f %-6s %7d %7d %8.1f%% %12.3f %12.3f %12.3f\n", temperature,
                  mode == engine::HeadSubsetPolicy::Mode::Never ? "full" : "auto", r.completion_tokens, r.guided_steps,
                  100.0 * r.subset_head_steps / std::max(1, r.guided_steps), per_token[runs / 2], per_step[runs / 2],
                  cpu_per_step[runs / 2]);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc >= 3 && std::string(argv[1]) == "head") return bench_head(argc, argv);
    if (argc >= 2 && std::string(argv[1]) == "synthetic") return bench_synthetic(argc, argv);
    if (argc >= 4 && std::string(argv[1]) == "guided") return bench_guided(argc, argv);
    std::fprintf(stderr,
                 "usage: bench_lm_head head MODEL_DIR [stored|q4_0] [threads]\n"
                 "       bench_lm_head synthetic [rows] [cols] [threads]\n"
                 "       bench_lm_head guided MODEL_DIR SCHEMA_FILE [stored|q4_0] [threads] [runs]\n");
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_lm_head: %s\n", e.what());
    return 1;
  }
}
