#include "engine/batch_loop.h"

#include "util/error.h"

namespace ringlm::engine {

struct BatchLoop::Waiter {
  SequenceRequest request;
  std::condition_variable done_cv;
  bool done = false;
  bool rejected = false;  // admit() refused it: error is the reason
  SequenceOutcome outcome;
};

BatchLoop::BatchLoop(Engine& engine, const BatchSchedulerOptions& options)
    : sched_(engine, options), max_sequences_(sched_.max_sequences()), context_capacity_(sched_.context_capacity()) {
  thread_ = std::thread([this] { run(); });
}

BatchLoop::~BatchLoop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

GenerationResult BatchLoop::generate(std::vector<std::int32_t> prompt, const GenerationParams& params,
                                     const TokenCallback& on_token) {
  Waiter w;
  w.request.prompt = std::move(prompt);
  w.request.params = params;
  w.request.on_token = on_token;  // called on the loop thread while this caller waits
  std::unique_lock lock(mu_);
  w.request.on_done = [this, &w](SequenceOutcome&& outcome) {
    std::lock_guard inner(mu_);
    w.outcome = std::move(outcome);
    w.done = true;
    w.done_cv.notify_all();
  };
  if (stopping_) fail("the batch loop is shutting down");
  queue_.push_back(&w);
  cv_.notify_all();
  w.done_cv.wait(lock, [&] { return w.done; });
  if (w.rejected || !w.outcome.error.empty()) fail(w.outcome.error);
  return std::move(w.outcome.result);
}

BatchLoopStats BatchLoop::stats() const {
  std::lock_guard lock(mu_);
  BatchLoopStats s = stats_;
  s.waiting = static_cast<int>(queue_.size());
  return s;
}

void BatchLoop::run() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || sched_.active() > 0; });
      if (stopping_) {
        sched_.cancel_all();
        for (Waiter* w : queue_) {
          w->rejected = true;
          w->outcome.error = "the server is shutting down";
          w->done = true;
          w->done_cv.notify_all();
        }
        queue_.clear();
      }
      // Join at this step: requests wait only for a free row.
      while (!stopping_ && !queue_.empty() && sched_.has_room()) {
        Waiter* w = queue_.front();
        queue_.pop_front();
        try {
          sched_.admit(std::move(w->request));
        } catch (const std::exception& e) {  // an Error, or bad_alloc: refused, never fatal to the loop
          w->rejected = true;
          w->outcome.error = e.what();
          w->done = true;
          w->done_cv.notify_all();
        }
      }
    }
    // The step runs unlocked: callers keep queueing; on_done takes the lock itself.
    const int advanced = sched_.step();
    {
      std::lock_guard lock(mu_);
      stats_.batch = sched_.stats();
      stats_.active = sched_.active();
      stats_.kv_bytes = sched_.kv_bytes();
      stats_.kv_tokens_used = sched_.kv_tokens_used();
      if (stopping_ && advanced == 0 && sched_.active() == 0) return;
    }
  }
}

}  // namespace ringlm::engine
