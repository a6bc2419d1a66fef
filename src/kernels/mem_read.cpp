#include "kernels/mem_read.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ringlm::kernels {

namespace {

std::uint64_t read_scalar(const std::uint8_t* p, std::size_t bytes) {
  std::uint64_t acc[4] = {0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    std::uint64_t w[4];
    std::memcpy(w, p + i, 32);
    for (int j = 0; j < 4; ++j) acc[j] ^= w[j];
  }
  for (; i < bytes; ++i) acc[0] ^= p[i];
  return acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) std::uint64_t read_avx2(const std::uint8_t* p, std::size_t bytes) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 128 <= bytes; i += 128) {
    a0 = _mm256_xor_si256(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_xor_si256(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_xor_si256(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_xor_si256(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i a = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  alignas(32) std::uint64_t w[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(w), a);
  return w[0] ^ w[1] ^ w[2] ^ w[3] ^ read_scalar(p + i, bytes - i);
}
#endif

}  // namespace

std::uint64_t mem_read_checksum(const std::uint8_t* data, std::size_t bytes) {
#if defined(__x86_64__)
  if (cpu_features().avx2) return read_avx2(data, bytes);
#endif
  return read_scalar(data, bytes);
}

double measure_read_bandwidth_gbs(std::size_t bytes, int threads, int repeats) {
  threads = std::max(1, threads);
  bytes = std::max<std::size_t>(bytes / 4096 * 4096, 4096);
  std::vector<std::uint8_t> buf(bytes);
  for (std::size_t i = 0; i < bytes; i += 64) buf[i] = static_cast<std::uint8_t>(i >> 6);
  const std::size_t slice = bytes / static_cast<std::size_t>(threads) / 64 * 64;
  double best = 0.0;
  std::vector<std::uint64_t> sink(static_cast<std::size_t>(threads));
  for (int rep = 0; rep < std::max(1, repeats); ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
      pool.emplace_back([&, t] { sink[t] = mem_read_checksum(buf.data() + t * slice, slice); });
    sink[0] = mem_read_checksum(buf.data(), slice);
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, static_cast<double>(slice) * threads / s / 1e9);
  }
  volatile std::uint64_t keep = 0;
  for (auto v : sink) keep = keep ^ v;
  (void)keep;
  return best;
}

}  // namespace ringlm::kernels
