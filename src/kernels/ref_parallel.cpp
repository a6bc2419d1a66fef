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

void ParallelFor::run(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn,
                      std::int64_t min_chunk) {
  if (n <= 0) return;
  const int slices = static_cast<int>(std::min<std::int64_t>(n_threads_, std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, min_chunk))));
  if (slices <= 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    job_slices_ = slices;
    pending_ = slices - 1;
    ++generation_;
  }
  wake_.notify_all();
  std::int64_t b, e;
  slice_bounds(n, slices, 0, &b, &e);
  fn(b, e);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ParallelFor::worker(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(std::int64_t, std::int64_t)>* job;
    std::int64_t n;
    int slices;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      slices = job_slices_;
    }
    if (index < slices) {
      std::int64_t b, e;
      slice_bounds(n, slices, index, &b, &e);
      (*job)(b, e);
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
