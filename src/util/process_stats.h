// Process memory figures from /proc/self/status, for benchmarks and /metrics.
#pragma once

#include <cstdint>

namespace ringlm {

// Current resident set size in bytes (VmRSS), or 0 where /proc is unavailable.
std::int64_t current_rss_bytes();
// Resident anonymous memory in bytes (RssAnon): heap and caches, not mapped model files,
// whose pages the kernel may drop and reload at will.
std::int64_t anon_rss_bytes();
// Peak resident set size in bytes (VmHWM), or 0 where /proc is unavailable.
std::int64_t peak_rss_bytes();

}  // namespace ringlm
