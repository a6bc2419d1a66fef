#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kernels/thread_pool.h"
#include "util/error.h"

namespace ringlm::kernels {
namespace {

TEST(ThreadPool, EveryIndexRunsExactlyOnceInContiguousShares) {
  for (std::size_t threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads, 50);
    for (std::size_t n : {0, 1, 2, 7, 100, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<std::size_t> calls{0};
      pool.parallel_for(n, [&](std::size_t b, std::size_t e, std::size_t p) {
        EXPECT_LT(b, e);
        EXPECT_LT(p, pool.size());
        for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
        calls.fetch_add(1);
      });
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n;
      EXPECT_LE(calls.load(), threads);
    }
  }
}

TEST(ThreadPool, ManyBackToBackCallsAndWakeUpAfterParking) {
  ThreadPool pool(3, 20);
  std::atomic<long> sum{0};
  for (int rep = 0; rep < 500; ++rep)
    pool.parallel_for(9, [&](std::size_t b, std::size_t e, std::size_t) { sum.fetch_add(long(e - b)); });
  EXPECT_EQ(sum.load(), 500 * 9);
  // Let the workers park, then check they wake up and take their share.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::vector<int> by(3, 0);
  pool.parallel_for(3, [&](std::size_t, std::size_t, std::size_t p) { by[p] = 1; });
  EXPECT_EQ(by, (std::vector<int>{1, 1, 1}));
}

TEST(ThreadPool, RejectsZeroThreads) { EXPECT_THROW(ThreadPool(0), Error); }

}  // namespace
}  // namespace ringlm::kernels
