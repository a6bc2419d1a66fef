// A persistent pool for the kernels: threads are created once; a parallel call hands each
// of the N participants (the caller is one of them) a contiguous share of [0, n) and
// returns when all are done. Idle workers spin for a short while (so back-to-back GEMVs of
// one decode step pay no wake-up) and then park on a futex (std::atomic::wait), so an idle
// engine costs no CPU. No allocation per call.
#pragma once

#include <atomic>
#include <mutex>
#include <cstdint>
#include <cstddef>
#include <thread>
#include <vector>

namespace ringlm::kernels {

class ThreadPool {
 public:
  // threads = total participants including the caller (>= 1). spin_us: how long an idle
  // worker polls before parking.
  explicit ThreadPool(std::size_t threads, unsigned spin_us = 200);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  std::size_t size() const { return workers_.size() + 1; }

  // Calls fn(begin, end, participant) on size() disjoint contiguous ranges covering [0, n)
  // (empty ranges are skipped), split as evenly as possible. Blocks until all are done.
  // Calls from several threads (server sessions sharing the process pool) are serialised;
  // a call from inside fn runs on the calling thread alone. Exceptions must not escape fn.
  template <typename Fn>
  void parallel_for(std::size_t n, Fn&& fn) {
    run(n, [](void* ctx, std::size_t b, std::size_t e, std::size_t p) { (*static_cast<Fn*>(ctx))(b, e, p); },
        static_cast<void*>(&fn));
  }

 private:
  using Thunk = void (*)(void* ctx, std::size_t begin, std::size_t end, std::size_t participant);
  void run(std::size_t n, Thunk thunk, void* ctx);
  void worker_loop(std::size_t participant);
  void do_share(std::size_t participant);

  std::vector<std::thread> workers_;
  unsigned spin_us_;
  std::mutex run_mu_;  // one job at a time
  // The job being run (written before generation_ is bumped, read after it is seen).
  Thunk thunk_ = nullptr;
  void* ctx_ = nullptr;
  std::size_t n_ = 0;
  alignas(64) std::atomic<std::uint32_t> generation_{0};
  alignas(64) std::atomic<std::uint32_t> pending_{0};
  std::atomic<bool> caller_parked_{false};
  alignas(64) std::atomic<std::size_t> sleepers_{0};
  std::atomic<bool> stop_{false};
  // On an oversubscribed machine a descheduled worker would keep a spinning caller busy
  // for a whole time slice, so the caller also spins only spin_us before parking.
};

// The process-wide pool the model uses: set_default_thread_count(n) if called before its
// first use (the CLI does so for --threads and RINGLM_THREADS), else the number of hardware
// threads (at most 8). Created on first use.
ThreadPool& default_thread_pool();
// Returns false (and changes nothing) once the default pool exists with another size.
bool set_default_thread_count(std::size_t threads);

}  // namespace ringlm::kernels
