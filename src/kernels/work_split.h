// Balanced splitting of a decode GEMV over the pool: each participant streams its own
// contiguous share front to back in chunks, and one that runs out takes chunks from the back
// of the share with the most left ("stealing").
//
// Why (docs/bench/decode.md): with a static half/half split, the two cores of the reference
// VM finish a GEMV's shares at different times (their DRAM bandwidth drifts call to call),
// and E2B decode spent ~16 % of its CPU samples with one thread spinning at a barrier while
// the other still streamed. Each share stays one forward stream (what the hardware and
// software prefetch want); only the tail of a slow share moves to the other core.
//
// A chunk's result must not depend on which participant computes it (true for the q4
// kernels: each output group is computed alone), so the bits do not change.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels/thread_pool.h"

namespace ringlm::kernels {

// Most participants the stealing split serves (the pool is capped at 8 by default; a larger
// pool falls back to the static split).
inline constexpr std::size_t kMaxStealParticipants = 16;

// Calls fn(begin, end, participant) on disjoint ranges covering [0, n), each a whole number
// of `chunk` units except the last of [0, n). Ranges handed to one call are contiguous.
template <typename Fn>
void parallel_for_stealing(ThreadPool& pool, std::size_t n, std::size_t chunk, Fn&& fn) {
  const std::size_t parts = pool.size();
  if (chunk == 0) chunk = 1;
  const std::size_t chunks = (n + chunk - 1) / chunk;
  if (parts == 1 || chunks < 2 * parts || parts > kMaxStealParticipants) {
    pool.parallel_for(n, [&](std::size_t b, std::size_t e, std::size_t p) { fn(b, e, p); });
    return;
  }
  // Share p is chunks [lo, hi) packed as (hi << 32) | lo: the owner advances lo, a thief
  // lowers hi, both by compare-and-swap on the one word, so no chunk runs twice.
  struct alignas(64) Share {
    std::atomic<std::uint64_t> range;
  };
  Share shares[kMaxStealParticipants];
  const std::size_t base = chunks / parts, extra = chunks % parts;
  for (std::size_t p = 0, c = 0; p < parts; ++p) {
    const std::size_t len = base + (p < extra ? 1 : 0);
    shares[p].range.store((static_cast<std::uint64_t>(c + len) << 32) | c, std::memory_order_relaxed);
    c += len;
  }
  auto run_chunk = [&](std::size_t c, std::size_t p) {
    const std::size_t b = c * chunk;
    fn(b, std::min(n, b + chunk), p);
  };
  pool.parallel_for(parts, [&](std::size_t p0, std::size_t p1, std::size_t participant) {
    for (std::size_t p = p0; p < p1; ++p) {
      // Own share, front to back.
      std::atomic<std::uint64_t>& own = shares[p].range;
      for (std::uint64_t r = own.load(std::memory_order_acquire);;) {
        const std::uint32_t lo = static_cast<std::uint32_t>(r), hi = static_cast<std::uint32_t>(r >> 32);
        if (lo >= hi) break;
        if (own.compare_exchange_weak(r, r + 1, std::memory_order_acq_rel)) {
          run_chunk(lo, participant);
          r = own.load(std::memory_order_acquire);
        }
      }
    }
    // Then the last chunk of the share with the most left, until none is left.
    for (;;) {
      std::size_t victim = parts;
      std::uint32_t most = 0;
      for (std::size_t q = 0; q < parts; ++q) {
        const std::uint64_t r = shares[q].range.load(std::memory_order_acquire);
        const std::uint32_t lo = static_cast<std::uint32_t>(r), hi = static_cast<std::uint32_t>(r >> 32);
        if (hi > lo && hi - lo > most) {
          most = hi - lo;
          victim = q;
        }
      }
      if (victim == parts) return;
      std::atomic<std::uint64_t>& v = shares[victim].range;
      std::uint64_t r = v.load(std::memory_order_acquire);
      const std::uint32_t lo = static_cast<std::uint32_t>(r), hi = static_cast<std::uint32_t>(r >> 32);
      if (lo >= hi) continue;
      const std::uint64_t taken = (static_cast<std::uint64_t>(hi - 1) << 32) | lo;
      if (v.compare_exchange_strong(r, taken, std::memory_order_acq_rel)) run_chunk(hi - 1, participant);
    }
  });
}

// Chunk size, in 16-row q4 groups of group_bytes each, for a one-row GEMV over `groups`
// groups: at most ~256 KB (~10 us of streaming on one core) so a slow share's tail is short,
// at most an eighth of a share so small matrices still split, at least 2 and even (the
// decode GEMV streams two groups side by side; an odd chunk would leave single groups).
// Activation rows up to which a q4 product is split by stealing rather than evenly: a
// speculative verify step or a small batch (2..8 rows) still streams the weights from DRAM
// once, like the GEMV, so its shares drift the same way (issue #33).
inline constexpr std::size_t kStealMaxRows = 8;

inline std::size_t gemv_chunk_groups(std::size_t groups, std::size_t group_bytes, std::size_t parts) {
  const std::size_t by_bytes = (256u << 10) / (group_bytes == 0 ? 1 : group_bytes);
  const std::size_t by_share = groups / (parts == 0 ? 1 : parts) / 8;
  std::size_t c = std::max<std::size_t>(2, std::min(by_bytes, by_share));
  return (c + 1) / 2 * 2;
}

}  // namespace ringlm::kernels
