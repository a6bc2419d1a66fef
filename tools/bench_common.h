// Helpers shared by the benchmark tools (tools/bench_*.cpp): comma lists on the command line
// and per-call timing that reports the best and the median call.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace ringlm::bench {

// "a,b,c" -> {"a", "b", "c"} (an empty field stays an empty string).
inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

struct Timing {
  double best = 0, median = 0;  // seconds per call
};

// Runs fn(call_index) after one warm-up call until min_ms have passed (at least 5 calls) and
// times every call. The machine is shared, so a mean would mostly measure the other tenants:
// the median and the best call (which approximates the machine to ourselves) are reported.
template <typename Fn>
Timing time_calls(double min_ms, Fn&& fn) {
  using Clock = std::chrono::steady_clock;
  fn(0);
  std::vector<double> t;
  const auto start = Clock::now();
  for (std::size_t call = 1;; ++call) {
    const auto t0 = Clock::now();
    fn(call);
    const auto t1 = Clock::now();
    t.push_back(std::chrono::duration<double>(t1 - t0).count());
    if (t.size() >= 5 && std::chrono::duration<double>(t1 - start).count() * 1e3 >= min_ms) break;
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

}  // namespace ringlm::bench
