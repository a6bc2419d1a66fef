// A BatchScheduler on its own thread, for callers on many threads (the HTTP server): every
// generate() call joins the one batched loop at its next step and leaves when it finishes,
// so all requests in flight share each forward pass (continuous batching).
//
//   engine::BatchLoop loop(engine, {.max_sequences = 8});
//   auto result = loop.generate(prompt, params, on_token);   // blocking, any thread
//
// on_token runs on the loop's thread and must be quick (a copy into a queue); returning
// false cancels that request at once, freeing its row for the next step. Requests beyond
// max_sequences wait for a free row.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/batch_scheduler.h"

namespace ringlm::engine {

struct BatchLoopStats {
  BatchStats batch;
  int active = 0;
  int waiting = 0;
  std::size_t kv_bytes = 0;
  std::int64_t kv_tokens_used = 0;
};

class BatchLoop {
 public:
  BatchLoop(Engine& engine, const BatchSchedulerOptions& options);
  ~BatchLoop();  // cancels what still runs and joins the thread
  BatchLoop(const BatchLoop&) = delete;
  BatchLoop& operator=(const BatchLoop&) = delete;

  // Throws ringlm::Error for a request the engine rejects (as Generator::generate).
  GenerationResult generate(std::vector<std::int32_t> prompt, const GenerationParams& params,
                            const TokenCallback& on_token);
  BatchLoopStats stats() const;
  int max_sequences() const { return max_sequences_; }
  int context_capacity() const { return context_capacity_; }

 private:
  struct Waiter;
  void run();

  BatchScheduler sched_;
  const int max_sequences_;
  const int context_capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // work for the loop
  std::deque<Waiter*> queue_;
  bool stopping_ = false;
  BatchLoopStats stats_;  // refreshed after each step, under mu_
  std::thread thread_;
};

}  // namespace ringlm::engine
