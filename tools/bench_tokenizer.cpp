// Tokenizer benchmark: load time of tokenizer.json, and single-thread encode / decode
// throughput on a deterministic ~1 MB mixed text (English prose, code, CJK, other scripts,
// emoji, whitespace runs). The same text can be written out for the JavaScript reference
// (tests/js/bench_tokenizer.mjs) so both numbers refer to identical input.
//
//   bench_tokenizer [--tokenizer DIR] [--bytes N] [--write-text FILE] [--runs R]
// (run from the repository root; the default tokenizer is assets/gemma4-tokenizer)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of this thread: on a shared, overloaded machine wall time mostly measures the
// neighbours, so both are reported.
double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Deterministic xorshift generator so every run (and the JS side) sees the same text.
struct Rng {
  uint64_t s = 0x2545F4914F6CDD1Dull;
  uint32_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return static_cast<uint32_t>(s >> 11);
  }
  template <typename T>
  const T& pick(const std::vector<T>& v) { return v[next() % v.size()]; }
};

std::string make_mixed_text(size_t target_bytes) {
  const std::vector<std::string> words = {
      "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "model", "token", "runtime",
      "inference", "cache", "attention", "layer", "Gemma", "weights", "memory", "throughput",
      "because", "although", "international", "understanding", "small", "device", "language",
      "of", "and", "to", "in", "is", "that", "with", "for", "as", "on", "was", "were", "which"};
  const std::vector<std::string> code = {
      "def f(x):\n    return x * 2\n",
      "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
      "const result = await fetch(url, { method: \"POST\" });\n",
      "if __name__ == \"__main__\":\n    main()\n",
      "std::vector<std::pair<int, float>> v{{1, 2.5f}};\n",
      "SELECT name, COUNT(*) FROM users WHERE age > 30 GROUP BY name;\n",
      "{\"name\": \"Alice\", \"age\": 30, \"tags\": [\"a\", \"b\"]}\n"};
  const std::vector<std::string> other = {
      "日本語のテキストを処理します。", "自然语言处理是人工智能的一个分支。", "안녕하세요, 반갑습니다.",
      "Привет, как дела? Всё хорошо.", "مرحبا بالعالم", "Ελληνικά γράμματα", "שלום עולם",
      "Ünïcödé façade naïve café", "👋🏽 hello 🦜 parrot 👨‍👩‍👧‍👦 family 🎉", "math: ∑ x_i² ≤ ∞",
      "𓀀 hieroglyph", "1,234.56 and 0.001e-10"};
  const std::vector<std::string> spaces = {"  ", "    ", "\n\n", "\n\n\n", "\t", "\t\t", "   \n", " \t "};
  Rng rng;
  std::string out;
  out.reserve(target_bytes + 256);
  while (out.size() < target_bytes) {
    const uint32_t kind = rng.next() % 10;
    if (kind < 5) {  // a prose paragraph
      const int n = 20 + static_cast<int>(rng.next() % 60);
      for (int i = 0; i < n; ++i) {
        // A quarter of the words are random letter strings, so that the text is not just
        // a few hundred distinct words (which would flatter the chunk cache).
        std::string w = rng.pick(words);
        if (rng.next() % 4 == 0) {
          w.clear();
          for (int k = 2 + static_cast<int>(rng.next() % 9); k > 0; --k) w += static_cast<char>('a' + rng.next() % 26);
        }
        if (i == 0 || rng.next() % 9 == 0) w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
        out += w;
        out += (rng.next() % 12 == 0) ? ", " : " ";
      }
      out += ".\n";
    } else if (kind < 7) {
      out += rng.pick(code);
    } else if (kind < 9) {
      out += rng.pick(other);
      out += rng.next() % 2 ? " " : "\n";
    } else {
      out += rng.pick(spaces);
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // Default: the repository's copy of the Gemma tokenizer (the same files as the test asset).
  std::string dir = "assets/gemma4-tokenizer";
  std::string write_text;
  size_t bytes = 1 << 20;
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--tokenizer") dir = value();
    else if (a == "--bytes") bytes = std::stoull(value());
    else if (a == "--write-text") write_text = value();
    else if (a == "--runs") runs = std::max(1, std::stoi(value()));
    else {
      std::fprintf(stderr, "usage: bench_tokenizer [--tokenizer DIR] [--bytes N] [--write-text FILE] [--runs R]\n");
      return 2;
    }
  }
  try {
    const std::string text = make_mixed_text(bytes);
    if (!write_text.empty()) {
      std::ofstream(write_text, std::ios::binary) << text;
      std::printf("wrote %zu bytes to %s\n", text.size(), write_text.c_str());
    }

    double best_load = 1e30, best_load_cpu = 1e30;
    ringlm::Tokenizer tok = ringlm::Tokenizer::load(dir);  // warm the page cache
    for (int r = 0; r < 3; ++r) {
      const auto t0 = Clock::now();
      const double c0 = thread_cpu_seconds();
      tok = ringlm::Tokenizer::load(dir);
      best_load_cpu = std::min(best_load_cpu, thread_cpu_seconds() - c0);
      best_load = std::min(best_load, seconds_since(t0));
    }

    // The first encode starts with an empty chunk cache; later runs reuse it.
    std::vector<int32_t> ids;
    double best_encode = 1e30, best_encode_cpu = 1e30, cold_encode = 0, cold_encode_cpu = 0;
    for (int r = 0; r < runs; ++r) {
      ids.clear();
      const auto t0 = Clock::now();
      const double c0 = thread_cpu_seconds();
      tok.encode_into(text, {}, ids);
      const double cpu = thread_cpu_seconds() - c0, wall = seconds_since(t0);
      if (r == 0) {
        cold_encode = wall;
        cold_encode_cpu = cpu;
      }
      best_encode = std::min(best_encode, wall);
      best_encode_cpu = std::min(best_encode_cpu, cpu);
    }
    double best_decode = 1e30;
    std::string decoded;
    for (int r = 0; r < runs; ++r) {
      const auto t0 = Clock::now();
      decoded = tok.decode(ids);
      best_decode = std::min(best_decode, seconds_since(t0));
    }
    // Worst case for the merge loop: one 256 KB word with nothing to cut it at (random
    // letters, no spaces or newlines), so the heap path runs on the whole of it.
    std::string long_word;
    {
      Rng rng;
      for (size_t k = 0; k < (256u << 10); ++k) long_word += static_cast<char>('a' + rng.next() % 26);
    }
    const double lw0 = thread_cpu_seconds();
    const auto long_ids = tok.encode(long_word);
    const double long_cpu = thread_cpu_seconds() - lw0;
    const bool long_ok = tok.decode(long_ids) == long_word;

    const double mb = static_cast<double>(text.size()) / 1e6;
    std::printf("text: %zu bytes, %zu tokens, round trip %s\n", text.size(), ids.size(),
                decoded == text ? "exact" : "MISMATCH");
    std::printf("load: %.1f ms wall, %.1f ms cpu (best of 3)\n", best_load * 1e3, best_load_cpu * 1e3);
    std::printf("encode, first run (cold cache): %.1f ms wall = %.2f MB/s; %.1f ms cpu = %.2f MB/s\n",
                cold_encode * 1e3, mb / cold_encode, cold_encode_cpu * 1e3, mb / cold_encode_cpu);
    std::printf("encode, best of %d: %.1f ms wall = %.2f MB/s; %.1f ms cpu = %.2f MB/s (single thread)\n", runs,
                best_encode * 1e3, mb / best_encode, best_encode_cpu * 1e3, mb / best_encode_cpu);
    std::printf("decode: %.1f ms, %.2f MB/s\n", best_decode * 1e3, mb / best_decode);
    std::printf("one 256 KB word (no cut points, heap merge loop): %.1f ms cpu = %.2f MB/s, %zu tokens, round trip %s\n",
                long_cpu * 1e3, static_cast<double>(long_word.size()) / 1e6 / long_cpu, long_ids.size(),
                long_ok ? "exact" : "MISMATCH");
    return decoded == text && long_ok ? 0 : 1;
  } catch (const ringlm::Error& e) {
    std::fprintf(stderr, "bench_tokenizer: error: %s\n", e.what());
    return 1;
  }
}
