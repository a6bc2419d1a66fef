// Process memory figures from /proc/self/status, for benchmarks and /metrics.
#pragma once

#include <cstdint>

namespace ringlm {

// Current resident set size in bytes (VmRSS), or 0 where /proc is unavailable.
std::int64_t current_rss_bytes();
// Peak resident set size in bytes (VmHWM), or 0 where /proc is unavailable.
std::int64_t peak_rss_bytes();

}  // namespace ringlm
