#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kernels/work_split.h"

namespace ringlm::kernels {
namespace {

// Every index runs exactly once, each call covers whole chunks (the last of [0, n) may be
// short) and starts on a chunk boundary, whatever the pool size and chunk.
TEST(WorkSplit, StealingCoversEveryIndexOnceInWholeChunks) {
  for (std::size_t threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads, 50);
    for (std::size_t n : {0, 1, 5, 16, 100, 1001, 4096}) {
      for (std::size_t chunk : {1, 2, 7, 64}) {
        std::vector<std::atomic<int>> hits(n);
        parallel_for_stealing(pool, n, chunk, [&](std::size_t b, std::size_t e, std::size_t p) {
          EXPECT_LT(b, e);
          EXPECT_LT(p, pool.size());
          if (pool.size() > 1 && n >= 2 * pool.size() * chunk) {  // the stealing split, not the fallback
            EXPECT_EQ(b % chunk, 0u) << "n " << n << " chunk " << chunk;
            EXPECT_TRUE(e - b == chunk || e == n) << "n " << n << " chunk " << chunk;
          }
          for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
        });
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n << " chunk " << chunk << " i " << i;
      }
    }
  }
}

// A participant that is slow (here: sleeps in each of its chunks) has the tail of its share
// taken by the others: with a static split participant 1 would run its 32 chunks, here the
// caller, done with its own share at once, must run some of them.
TEST(WorkSplit, SlowParticipantsShareIsStolen) {
  ThreadPool pool(2, 50);
  const std::size_t n = 64;
  std::vector<std::atomic<int>> by(2);
  std::vector<std::atomic<int>> hits(n);
  parallel_for_stealing(pool, n, 1, [&](std::size_t b, std::size_t e, std::size_t p) {
    if (p == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
    by[p].fetch_add(static_cast<int>(e - b));
  });
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
  EXPECT_GT(by[0].load(), 32) << "the fast participant took none of the slow one's share";
  EXPECT_EQ(by[0].load() + by[1].load(), 64);
}

TEST(WorkSplit, GemvChunkIsEvenAndBounded) {
  // E2B shapes: 1536 columns (13,824-byte groups) and 12288 columns (110,592-byte groups).
  EXPECT_EQ(gemv_chunk_groups(16384, 13824, 2), 18u);  // LM head: 256 KB / 13.8 KB = 18
  EXPECT_EQ(gemv_chunk_groups(96, 110592, 2), 2u);     // down_proj: 2 groups already > 256 KB
  EXPECT_EQ(gemv_chunk_groups(16, 13824, 2), 2u);      // PLE gate: at least 2
  EXPECT_EQ(gemv_chunk_groups(160, 13824, 2), 10u);    // q+k+v: an eighth of a share
  for (std::size_t g : {1, 3, 17, 1000, 16384})
    for (std::size_t bytes : {std::size_t{1}, std::size_t{9216}, std::size_t{13824}, std::size_t{110592}, std::size_t{1} << 20}) {
      const std::size_t c = gemv_chunk_groups(g, bytes, 2);
      EXPECT_EQ(c % 2, 0u);
      EXPECT_GE(c, 2u);
    }
}

}  // namespace
}  // namespace ringlm::kernels
