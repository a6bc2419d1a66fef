#include "kernels/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "util/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ringlm::kernels {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

// Polls `done` for up to spin_us: pause-polls for the first kPauseUs (a job handed over by a
// thread running on another core is seen within ~1 us, and in decode the next hand-off
// usually comes within tens of us), then sched_yield between polls, so that if the thread we
// wait for shares our core (more threads than cores) it gets to run instead of waiting out
// our spin. Returns whether done() became true.
//
// Why pause first for that long: on a machine shared with niced background work (builds,
// tests), a yield hands the core to a background task for its whole slice, and a decode step
// has ~250 hand-offs; yielding after ~256 polls made E2B decode lose ~9 % of its samples to
// the scheduler and fall behind llama.cpp (which spins) on the loaded VM (docs/bench/decode.md).
constexpr unsigned kPauseUs = 50;

template <typename Done>
bool spin_until(Done&& done, unsigned spin_us) {
  for (int i = 0; i < 256; ++i) {
    if (done()) return true;
    cpu_relax();
  }
  const auto start = std::chrono::steady_clock::now();
  const auto pause_end = start + std::chrono::microseconds(std::min(kPauseUs, spin_us));
  const auto deadline = start + std::chrono::microseconds(spin_us);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() > pause_end) break;
  }
  while (!done()) {
    std::this_thread::yield();
    if (std::chrono::steady_clock::now() > deadline) return done();
  }
  return true;
}
}  // namespace

ThreadPool::ThreadPool(std::size_t threads, unsigned spin_us) : spin_us_(spin_us) {
  if (threads == 0) fail("thread pool: needs at least 1 thread");
  if (threads > 0xffff) fail("thread pool: at most 65535 threads");
  workers_.reserve(threads - 1);
  for (std::size_t p = 1; p < threads; ++p) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::do_share(std::size_t participant) {
  const std::size_t parts = size();
  const std::size_t base = n_ / parts, extra = n_ % parts;
  const std::size_t begin = participant * base + (participant < extra ? participant : extra);
  const std::size_t end = begin + base + (participant < extra ? 1 : 0);
  if (begin < end) thunk_(ctx_, begin, end, participant);
}

namespace {
// Set while this thread runs a share of some pool's job: a nested parallel call then runs
// inline instead of waiting on a pool whose participants are busy (which would deadlock).
thread_local bool t_in_job = false;
struct InJob {
  bool saved = t_in_job;
  InJob() { t_in_job = true; }
  ~InJob() { t_in_job = saved; }
};
}  // namespace

void ThreadPool::run_claimed_shares(bool worker) {
  InJob guard;
  for (std::uint64_t t = ticket_.load(std::memory_order_acquire);;) {
    if (worker && hold_.load(std::memory_order_relaxed)) return;
    const std::uint32_t index = static_cast<std::uint32_t>(t);
    // The word carries the job's share count (bits 16-31) next to the next index (bits
    // 0-15), so "none left" is decided from the word alone; the job's other fields are read
    // only after a successful claim, which synchronises with the caller's release store, and
    // they cannot change until that share is reported done.
    const std::uint32_t shares = static_cast<std::uint32_t>(t >> 16) & 0xffff;
    if ((index & 0xffff) >= shares) return;
    if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    do_share(index & 0xffff);
    // The share count comes from the claimed word, not shares_: once this share is reported
    // the caller may start the next job and rewrite shares_.
    if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == shares && caller_parked_.load(std::memory_order_seq_cst))
      done_.notify_one();
    t = ticket_.load(std::memory_order_acquire);
  }
}

void ThreadPool::run(std::size_t n, Thunk thunk, void* ctx) {
  if (workers_.empty() || n <= 1 || t_in_job) {
    if (n > 0) {
      InJob guard;
      thunk(ctx, 0, n, 0);
    }
    return;
  }
  std::lock_guard<std::mutex> serial(run_mu_);
  thunk_ = thunk;
  ctx_ = ctx;
  n_ = n;
  shares_ = static_cast<std::uint32_t>(std::min(n, size()));
  done_.store(0, std::memory_order_relaxed);
  caller_parked_.store(false, std::memory_order_relaxed);
  ++job_;
  // Publishes the job: a claim's acquire sees every field written above.
  ticket_.store((static_cast<std::uint64_t>(job_) << 32) | (static_cast<std::uint64_t>(shares_) << 16),
                std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_seq_cst);  // wakes spinning and parked workers
  if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  run_claimed_shares(false);
  const auto all_done = [this] { return done_.load(std::memory_order_acquire) == shares_; };
  if (spin_until(all_done, spin_us_)) return;
  // Park until the last share reports (same store-then-check pairing as run_claimed_shares).
  caller_parked_.store(true, std::memory_order_seq_cst);
  for (std::uint32_t d; (d = done_.load(std::memory_order_seq_cst)) != shares_;) done_.wait(d);
}

void ThreadPool::worker_loop() {
  std::uint32_t seen = 0;
  for (;;) {
    // Spin first: during decode the next job usually arrives within microseconds.
    std::uint32_t gen = seen;
    spin_until([&] { return (gen = generation_.load(std::memory_order_acquire)) != seen; }, spin_us_);
    if (gen == seen) {
      // Park. Incrementing sleepers_ before re-checking generation_ (both seq_cst) pairs with
      // run()'s bump-then-check, so a job published meanwhile is never missed.
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while ((gen = generation_.load(std::memory_order_seq_cst)) == seen) generation_.wait(seen);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = gen;
    if (stop_.load()) return;
    run_claimed_shares(true);
  }
}

namespace {
std::atomic<std::size_t> g_requested_threads{0};
std::atomic<std::size_t> g_default_size{0};  // non-zero once the default pool exists
}  // namespace

bool set_default_thread_count(std::size_t threads) {
  if (threads == 0) return false;
  g_requested_threads.store(threads);
  const std::size_t existing = g_default_size.load();
  return existing == 0 || existing == threads;
}

ThreadPool& default_thread_pool() {
  static ThreadPool pool([] {
    if (const std::size_t n = g_requested_threads.load(); n > 0) return n;
    const unsigned hw = std::thread::hardware_concurrency();
    return static_cast<std::size_t>(hw == 0 ? 1 : (hw > 8 ? 8 : hw));
  }());
  g_default_size.store(pool.size());
  return pool;
}

}  // namespace ringlm::kernels
