#include "kernels/ref_parallel.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "kernels/thread_pool.h"

namespace ringlm::kernels {

namespace {
void slice_bounds(std::int64_t n, int slices, int i, std::int64_t* begin, std::int64_t* end) {
  *begin = n * i / slices;
  *end = n * (i + 1) / slices;
}
}  // namespace

ParallelFor::ParallelFor(int n_threads) : n_threads_(std::max(1, n_threads)) {
  if (n_threads_ <= 1) return;
  // Share the process pool when it has (or will be created with) this many participants.
  set_default_thread_count(static_cast<std::size_t>(n_threads_));
  ThreadPool& shared = default_thread_pool();
  if (shared.size() == static_cast<std::size_t>(n_threads_)) {
    pool_ = &shared;
  } else {
    owned_ = std::make_unique<ThreadPool>(static_cast<std::size_t>(n_threads_));
    pool_ = owned_.get();
  }
}

ParallelFor::~ParallelFor() = default;

void ParallelFor::run_erased(std::int64_t n, std::int64_t min_chunk, void* ctx, Trampoline call) {
  if (n <= 0) return;
  const int slices = static_cast<int>(
      std::min<std::int64_t>(n_threads_, std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, min_chunk))));
  if (slices <= 1 || pool_ == nullptr) {
    call(ctx, 0, n);
    return;
  }
  // One slice per pool participant (slices <= size); slice bounds as n*i/slices.
  pool_->parallel_for(static_cast<std::size_t>(slices), [&](std::size_t s0, std::size_t s1, std::size_t) {
    for (std::size_t i = s0; i < s1; ++i) {
      std::int64_t b, e;
      slice_bounds(n, slices, static_cast<int>(i), &b, &e);
      if (b < e) call(ctx, b, e);
    }
  });
}

int default_thread_count() {
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(std::min(hw, 64u));
}

}  // namespace ringlm::kernels
