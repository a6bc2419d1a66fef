// Timing of the GGUF pieces that cost something: scalar dequantization throughput per type,
// and opening a GGUF with the full Gemma 4 tokenizer (header parse + tokenizer build).
//   gguf_bench [TOKENIZER_DIR]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <vector>

#include "io/gguf_reader.h"
#include "io/gguf_writer.h"
#include "kernels/dequant_ggml.h"
#include "tokenizer/gguf_tokenizer_loader.h"

using namespace ringlm;
using Clock = std::chrono::steady_clock;

static double secs_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
  const std::int64_t n = 1 << 24;  // 16M values
  std::vector<float> x(n), y(n);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (auto& v : x) v = normal(rng);
  std::printf("%-5s %12s %12s %14s\n", "type", "quant MB/s", "deq Mval/s", "deq out GB/s");
  for (io::DType t : {io::DType::F16, io::DType::BF16, io::DType::Q8_0, io::DType::Q4_0, io::DType::Q4_1,
                      io::DType::Q4_K, io::DType::Q5_K, io::DType::Q6_K}) {
    std::vector<std::uint8_t> q(static_cast<std::size_t>(kernels::row_bytes(t, n)));
    auto t0 = Clock::now();
    kernels::quantize_row(t, x.data(), q.data(), n);
    const double tq = secs_since(t0);
    t0 = Clock::now();
    for (int rep = 0; rep < 3; ++rep) kernels::dequantize_row(t, q.data(), y.data(), n);
    const double td = secs_since(t0) / 3;
    std::printf("%-5s %12.0f %12.0f %14.2f\n", io::dtype_name(t), n * 4 / tq / 1e6, n / td / 1e6, n * 4 / td / 1e9);
  }
  if (argc > 1) {
    const std::filesystem::path dir = argv[1];
    auto t0 = Clock::now();
    const auto data = gguf_tokenizer_from_hf(dir);
    const double t_conv = secs_since(t0);
    io::GgufWriter w;
    w.add_string("general.architecture", "gemma4");
    io::gguf_write_tokenizer(w, data);
    const auto path = std::filesystem::temp_directory_path() / "ringlm-gguf-bench-tok.gguf";
    w.write(path);
    t0 = Clock::now();
    const io::GgufFile f(path);
    const double t_parse = secs_since(t0);
    t0 = Clock::now();
    const auto tok = load_gguf_tokenizer(f);
    const double t_tok = secs_since(t0);
    std::printf("tokenizer.json -> GGUF metadata %.2f s; GGUF parse (%zu bytes, %zu keys) %.3f s; "
                "Tokenizer from GGUF metadata (%d tokens) %.2f s\n",
                t_conv, f.size(), f.metadata().size(), t_parse, tok.vocab_size(), t_tok);
    std::filesystem::remove(path);
  }
  return 0;
}
