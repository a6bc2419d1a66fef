// A small fixed pool of worker threads that runs one parallel-for at a time.
// Created once per model (never per token); `run(n, fn)` calls fn(begin, end) on disjoint
// contiguous slices of [0, n) and returns when all are done.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ringlm::kernels {

class ParallelFor {
 public:
  // n_threads <= 1 runs everything on the calling thread.
  explicit ParallelFor(int n_threads);
  ~ParallelFor();
  ParallelFor(const ParallelFor&) = delete;
  ParallelFor& operator=(const ParallelFor&) = delete;

  int size() const { return n_threads_; }
  // Splits [0, n) into at most size() slices of at least `min_chunk` items each.
  void run(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn, std::int64_t min_chunk = 1);

 private:
  void worker(int index);
  int n_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(std::int64_t, std::int64_t)>* job_ = nullptr;
  std::int64_t job_n_ = 0;
  int job_slices_ = 0;
  std::uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// Default worker count: hardware threads, overridable with RINGLM_THREADS.
int default_thread_count();

}  // namespace ringlm::kernels
