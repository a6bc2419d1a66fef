// A small fixed pool of worker threads that runs one parallel-for at a time.
// Created once per model (never per token); `run(n, fn)` calls fn(begin, end) on disjoint
// contiguous slices of [0, n) and returns when all are done.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <type_traits>
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
  // Splits [0, n) into at most size() slices of at least `min_chunk` items each and calls
  // fn(begin, end) on each. The callable is passed by reference, never copied or wrapped in
  // an allocating std::function, so a parallel matmul on the decode path allocates nothing.
  // Calls from several threads are serialised.
  template <typename Fn>
  void run(std::int64_t n, Fn&& fn, std::int64_t min_chunk = 1) {
    using F = std::remove_reference_t<Fn>;
    run_erased(n, min_chunk, const_cast<void*>(static_cast<const void*>(&fn)),
               [](void* ctx, std::int64_t b, std::int64_t e) { (*static_cast<F*>(ctx))(b, e); });
  }

 private:
  using Trampoline = void (*)(void* ctx, std::int64_t begin, std::int64_t end);
  void run_erased(std::int64_t n, std::int64_t min_chunk, void* ctx, Trampoline call);
  void worker(int index);
  int n_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::mutex run_mu_;  // one parallel-for at a time
  void* job_ctx_ = nullptr;
  Trampoline job_call_ = nullptr;
  std::int64_t job_n_ = 0;
  int job_slices_ = 0;
  std::uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// Default worker count: hardware threads, overridable with RINGLM_THREADS.
int default_thread_count();

}  // namespace ringlm::kernels
