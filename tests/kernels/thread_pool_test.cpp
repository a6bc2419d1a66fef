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

// A worker the OS has descheduled must not hold up a job it has not started: with every
// worker held (claiming nothing), each call still completes, on the caller alone, with every
// share run exactly once under its own participant index. Failed before shares were claimed
// (the caller waited for the held workers forever).
TEST(ThreadPool, AJobDoesNotWaitForWorkersThatHaveNotStarted) {
  ThreadPool pool(3, 20);
  pool.parallel_for(3, [](std::size_t, std::size_t, std::size_t) {});  // workers running
  pool.hold_workers_for_testing(true);
  const auto caller = std::this_thread::get_id();
  for (int rep = 0; rep < 50; ++rep) {
    std::vector<std::atomic<int>> hits(10);
    std::vector<int> by(3, 0);
    std::atomic<int> other_threads{0};
    pool.parallel_for(10, [&](std::size_t b, std::size_t e, std::size_t p) {
      if (std::this_thread::get_id() != caller) other_threads.fetch_add(1);
      by[p] += 1;
      for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    for (auto& h : hits) {
      ASSERT_EQ(h.load(), 1);
    }
    EXPECT_EQ(by, (std::vector<int>{1, 1, 1}));
    // A worker may have claimed before the hold was seen only in the first job.
    if (rep > 0) {
      EXPECT_EQ(other_threads.load(), 0);
    }
  }
  // Released, the workers take shares again.
  pool.hold_workers_for_testing(false);
  std::atomic<int> other_threads{0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (other_threads.load() == 0 && std::chrono::steady_clock::now() < deadline)
    pool.parallel_for(3, [&](std::size_t, std::size_t, std::size_t) {
      if (std::this_thread::get_id() != caller) other_threads.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    });
  EXPECT_GT(other_threads.load(), 0);
}

// Back-to-back jobs whose shares finish at very different times: a worker that claims late
// must take a share of the job it sees, never one of an earlier job (the job bits of the
// ticket), so no index runs twice or is lost across 2,000 jobs.
TEST(ThreadPool, LateClaimsNeverCrossJobs) {
  ThreadPool pool(4, 5);
  for (int rep = 0; rep < 2000; ++rep) {
    const std::size_t n = 1 + rep % 9;
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, [&](std::size_t b, std::size_t e, std::size_t p) {
      if (p == 1 && rep % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
      for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "rep " << rep;
  }
}

TEST(ThreadPool, RejectsZeroThreads) { EXPECT_THROW(ThreadPool(0), Error); }

}  // namespace
}  // namespace ringlm::kernels
