// bound_allocator_retention (connection_guard.h): after a burst of threads that each allocated
// and freed a few MB, the process returns to about its resident size before the burst. Before
// the bound, each thread's malloc arena kept its freed top resident (glibc had raised its trim
// threshold after a large free), ~3 MB per arena: the attack runs of RELIABILITY.md ended
// ~40 MB above the server's heap in use.
#include <gtest/gtest.h>

#include <barrier>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "server/connection_guard.h"
#include "../sanitizer_build.h"

namespace {

long resident_kb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4;
}

TEST(AllocatorRetention, ABurstOfThreadArenasIsReturnedToTheSystem) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "glibc's allocator only";
#endif
  if (ringlm::testing::kAddressSanitizer) GTEST_SKIP() << "ASan replaces the allocator";
  ringlm::server::bound_allocator_retention();
  constexpr int kThreads = 12;
  constexpr std::size_t kSmall = 200, kCount = 15000;  // 3 MB of small blocks per thread
  const long before = resident_kb();
  std::barrier all_allocated(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      // A large block first: its free is what raised glibc's dynamic thresholds.
      { std::vector<char> large(2 << 20, 1); }
      std::vector<std::unique_ptr<char[]>> blocks;
      blocks.reserve(kCount);
      for (std::size_t i = 0; i < kCount; ++i) {
        blocks.emplace_back(new char[kSmall]);
        blocks.back()[0] = static_cast<char>(i);  // touched, so resident
      }
      all_allocated.arrive_and_wait();  // every thread alive at once: one arena each, up to the cap
      blocks.clear();
    });
  }
  for (auto& t : threads) t.join();
  const long rise_kb = resident_kb() - before;
  std::printf("resident size rose %ld KiB after the burst\n", rise_kb);
  // Unbounded: ~3 MB per arena stays (38.2 MB in every one of 30 runs here). Bounded: at most
  // 4 arenas, each trimmed down to 1 MiB of free top: 1-6 MB on a quiet machine, up to 10.6 MB
  // with other tests running beside it (CI's -j2; a 10 MiB bound failed there at 10,252 KiB).
  // 20 MiB sits between the two.
  EXPECT_LT(rise_kb, 20 * 1024) << "resident size rose " << rise_kb << " KiB after the burst";
}

}  // namespace
