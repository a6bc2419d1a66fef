// The model's parallel-for: `run(n, fn)` calls fn(begin, end) on disjoint contiguous slices
// of [0, n) and returns when all are done. It runs on the kernels' persistent ThreadPool
// (the process-wide one when the sizes agree), so the float ops of a decode step and the
// w4a8 GEMVs share one set of hot workers instead of two pools competing for the cores
// and paying a condition-variable wake-up per call.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

namespace ringlm::kernels {

class ThreadPool;

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
  int n_threads_;
  ThreadPool* pool_ = nullptr;          // the default pool, or owned_
  std::unique_ptr<ThreadPool> owned_;   // when this size differs from the default pool's
};

// Default worker count: the hardware threads (at most 64). The CLI passes RINGLM_THREADS as
// an explicit thread count instead.
int default_thread_count();

}  // namespace ringlm::kernels
