#include "kernels/ref_parallel.h"

#include <algorithm>
#include <cstdlib>

namespace ringlm::kernels {

namespace {
void slice_bounds(std::int64_t n, int slices, int i, std::int64_t* begin, std::int64_t* end) {
  *begin = n * i / slices;
  *end = n * (i + 1) / slices;
}
}  // namespace

ParallelFor::ParallelFor(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ParallelFor::~ParallelFor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ParallelFor::run_erased(std::int64_t n, std::int64_t min_chunk, void* ctx, Trampoline call) {
  if (n <= 0) return;
  std::lock_guard<std::mutex> serial(run_mu_);
  const int slices = static_cast<int>(std::min<std::int64_t>(n_threads_, std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, min_chunk))));
  if (slices <= 1) {
    call(ctx, 0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ctx_ = ctx;
    job_call_ = call;
    job_n_ = n;
    job_slices_ = slices;
    pending_ = slices - 1;
    ++generation_;
  }
  wake_.notify_all();
  std::int64_t b, e;
  slice_bounds(n, slices, 0, &b, &e);
  call(ctx, b, e);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ctx_ = nullptr;
  job_call_ = nullptr;
}

void ParallelFor::worker(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    void* ctx;
    Trampoline call;
    std::int64_t n;
    int slices;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ctx = job_ctx_;
      call = job_call_;
      n = job_n_;
      slices = job_slices_;
    }
    if (index < slices) {
      std::int64_t b, e;
      slice_bounds(n, slices, index, &b, &e);
      call(ctx, b, e);
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

int default_thread_count() {
  if (const char* env = std::getenv("RINGLM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1 && n <= 1024) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(std::min(hw, 64u));
}

}  // namespace ringlm::kernels
