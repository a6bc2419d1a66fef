// A persistent pool for the kernels: threads are created once; a parallel call cuts [0, n)
// into N contiguous shares (N = the pool's size, the caller included) and returns when all
// are done. Idle workers spin for a short while (so back-to-back GEMVs of one decode step pay
// no wake-up) and then park on a futex (std::atomic::wait), so an idle engine costs no CPU.
// No allocation per call.
//
// Shares are claimed, not assigned: the caller and each worker that sees the job take the
// next unclaimed share until none is left, and the call returns when every claimed share is
// finished. A worker that the OS has descheduled (another process, or a flood of connections
// on a server, wants the core) therefore never holds up a job it has not started: the
// caller runs its share instead. With fixed assignment, the caller waited out the worker's
// whole time slice at every one of the ~250 hand-offs of a decode step, and a 2-thread
// `serve` under a connection flood ran 5-6x slower while a 1-thread one did not slow at all
// (RELIABILITY.md, issue #19).
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

  // Test hook: while held, workers claim no share (as if the OS had descheduled them all),
  // so a call must complete on the caller alone.
  void hold_workers_for_testing(bool hold) { hold_.store(hold); }

  // Calls fn(begin, end, participant) on size() disjoint contiguous ranges covering [0, n)
  // (empty ranges are skipped), split as evenly as possible; `participant` is the share's
  // index (each index runs at most once per call, on whichever thread claimed it, so per-
  // participant scratch is never used by two threads at once). Blocks until all are done.
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
  void worker_loop();
  void do_share(std::size_t participant);
  // Claims and runs shares of the current job until none is left unclaimed.
  void run_claimed_shares(bool worker);

  std::vector<std::thread> workers_;
  unsigned spin_us_;
  std::mutex run_mu_;  // one job at a time
  // The job being run (written before generation_ is bumped, read after it is seen).
  Thunk thunk_ = nullptr;
  void* ctx_ = nullptr;
  std::size_t n_ = 0;
  std::uint32_t shares_ = 0;  // non-empty shares of the job: min(n, size())
  std::uint32_t job_ = 0;     // the caller's job counter (under run_mu_)
  alignas(64) std::atomic<std::uint32_t> generation_{0};
  // (job << 32) | (shares << 16) | next unclaimed share; the job bits make a claim by a
  // worker that loaded the word during an earlier job fail instead of taking a share of the
  // wrong job.
  alignas(64) std::atomic<std::uint64_t> ticket_{0};
  alignas(64) std::atomic<std::uint32_t> done_{0};  // shares of the current job finished
  std::atomic<bool> hold_{false};
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
