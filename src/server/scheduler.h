// Runs generation jobs on a fixed set of slots: one worker thread per Backend slot, fed from a
// bounded FIFO queue. HTTP threads submit a Job and read its token events as they come; a
// cancelled job (client gone, server shutting down) stops at its next token and frees its slot.
// Slots are handed out under the scheduler's lock, never by a worker waking up: a job meets a
// free slot at once (in submit(), or when a running job ends), and a job's slot is free again
// before its answer is delivered, so a client that has its answer can count on the slot.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/generation.h"
#include "server/backend.h"
#include "server/metrics.h"

namespace ringlm::server {

// One generation request, shared by the HTTP thread that reads it and the worker that runs it.
class Job {
 public:
  using Clock = std::chrono::steady_clock;

  Job(std::vector<std::int32_t> prompt, engine::GenerationParams params)
      : prompt_(std::move(prompt)), params_(std::move(params)), submitted_(Clock::now()) {}

  // Reader side. Moves pending token events into `out` (cleared first); waits up to `timeout`
  // for something to happen. Returns true once the job has finished and `out` holds the last
  // events (then result() or error_status() tell how it ended).
  bool take_events(std::vector<engine::TokenEvent>& out, std::chrono::milliseconds timeout);
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  // Valid after take_events() returned true.
  const engine::GenerationResult& result() const { return result_; }
  int error_status() const { return error_status_; }  // 0 = no error
  const std::string& error_message() const { return error_message_; }
  const std::string& error_param() const { return error_param_; }  // "" = none named
  const std::string& error_code() const { return error_code_; }

  // Worker side.
  const std::vector<std::int32_t>& prompt() const { return prompt_; }
  const engine::GenerationParams& params() const { return params_; }
  Clock::time_point submitted() const { return submitted_; }
  bool push(const engine::TokenEvent& event);  // false = stop generating
  void finish(engine::GenerationResult result);
  void fail(int status, std::string message, std::string param = "", std::string code = "");

 private:
  const std::vector<std::int32_t> prompt_;
  const engine::GenerationParams params_;
  const Clock::time_point submitted_;
  std::atomic<bool> cancelled_{false};

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<engine::TokenEvent> pending_;
  bool finished_ = false;
  engine::GenerationResult result_;
  int error_status_ = 0;
  std::string error_message_, error_param_, error_code_;
};

class Scheduler {
 public:
  // `queue_limit`: how many jobs may wait for a slot beyond those that can start at once.
  Scheduler(Backend& backend, int queue_limit, Metrics& metrics);
  ~Scheduler();  // cancels everything and joins the workers
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a job (FIFO). Throws ApiError 429 when the queue is full, 503 when draining.
  void submit(const std::shared_ptr<Job>& job);

  // A place in the queue held while a request prepares expensive input (decoding and
  // encoding media), so that a request the queue would refuse is refused before that work.
  // Counts against the queue like a waiting job until submitted or destroyed.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
    Reservation& operator=(Reservation&& o) noexcept;
    Reservation(const Reservation&) = delete;
    ~Reservation();

   private:
    friend class Scheduler;
    explicit Reservation(Scheduler* s) : s_(s) {}
    Scheduler* s_ = nullptr;
  };
  // Throws as submit() would.
  Reservation reserve();
  // Queues a job in the place `r` holds (no second check).
  void submit(const std::shared_ptr<Job>& job, Reservation&& r);

  void begin_drain();  // refuse new jobs from now on
  bool draining() const { return draining_.load(); }
  void cancel_all();   // cancel running and waiting jobs
  // Waits until no job is running or waiting; false if `deadline` passed first.
  bool wait_idle(Job::Clock::time_point deadline);

  int slots() const { return static_cast<int>(workers_.size()); }
  int queue_depth() const;
  int active() const { return active_.load(); }  // slots holding a job (handed out, not yet answered)

 private:
  struct Outcome;            // how a run ended, delivered to its Job once the slot is free
  void check_room_locked();  // throws 503/429 as submit()
  void dispatch_locked();    // gives queued jobs to free slots, oldest job first
  void worker_loop(int slot);
  Outcome run(int slot, Job& job);

  Backend& backend_;
  Metrics& metrics_;
  const int queue_limit_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // a job arrived or stopping
  std::condition_variable idle_cv_;   // a job finished
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::shared_ptr<Job>> running_;  // per slot, null when free; set when handed out
  int free_slots_ = 0;  // null entries of running_
  int reserved_ = 0;  // places held by Reservations
  bool stopping_ = false;
  std::atomic<bool> draining_{false};
  std::atomic<int> active_{0};
  std::vector<std::thread> workers_;
};

}  // namespace ringlm::server
