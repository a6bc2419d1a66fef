#include "server/scheduler.h"

#include "server/api_error.h"
#include "util/error.h"

namespace ringlm::server {

using engine::GenerationResult;
using engine::TokenEvent;

bool Job::take_events(std::vector<TokenEvent>& out, std::chrono::milliseconds timeout) {
  out.clear();
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return finished_ || !pending_.empty(); });
  out.swap(pending_);
  return finished_;
}

bool Job::push(const TokenEvent& event) {
  {
    std::lock_guard lock(mu_);
    pending_.push_back(event);
  }
  cv_.notify_all();
  return !cancelled();
}

void Job::finish(GenerationResult result) {
  {
    std::lock_guard lock(mu_);
    result_ = std::move(result);
    finished_ = true;
  }
  cv_.notify_all();
}

void Job::fail(int status, std::string message, std::string param, std::string code) {
  {
    std::lock_guard lock(mu_);
    error_status_ = status;
    error_message_ = std::move(message);
    error_param_ = std::move(param);
    error_code_ = std::move(code);
    finished_ = true;
  }
  cv_.notify_all();
}

// A finished run: the result, or an error (status != 0).
struct Scheduler::Outcome {
  GenerationResult result;
  int status = 0;
  std::string message, param, code;
};

Scheduler::Scheduler(Backend& backend, int queue_limit, Metrics& metrics)
    : backend_(backend), metrics_(metrics), queue_limit_(queue_limit < 0 ? 0 : queue_limit) {
  const int n = backend.slots();
  if (n < 1) fail("backend reports ", n, " slots; at least 1 is needed");
  running_.resize(static_cast<std::size_t>(n));
  free_slots_ = n;  // free from the start, whether or not the workers have begun to wait
  workers_.reserve(static_cast<std::size_t>(n));
  for (int slot = 0; slot < n; ++slot) workers_.emplace_back([this, slot] { worker_loop(slot); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    draining_ = true;
    for (auto& job : running_) if (job) job->cancel();
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
  // Anything still queued never ran.
  for (auto& job : queue_) job->fail(503, "server is shutting down");
}

void Scheduler::check_room_locked() {
  if (draining_ || stopping_) throw ApiError(503, "server is shutting down", "", "shutting_down");
  // Jobs that a free slot takes at once do not count against the queue. The count of free
  // slots is kept under this lock; counting workers parked in their wait instead (as before)
  // refused jobs while a worker was between its answer and its wait, or not yet started.
  if (static_cast<int>(queue_.size()) + reserved_ >= queue_limit_ + free_slots_) {
    metrics_.count_rejected_queue_full();
    throw ApiError(429, "server is busy: all " + std::to_string(slots()) + " slots are in use and " +
                            std::to_string(queue_limit_) + " requests are already waiting",
                   "", "queue_full");
  }
}

void Scheduler::dispatch_locked() {
  if (stopping_) return;
  bool handed = false;
  for (std::size_t slot = 0; slot < running_.size() && free_slots_ > 0 && !queue_.empty(); ++slot) {
    if (running_[slot]) continue;
    running_[slot] = std::move(queue_.front());
    queue_.pop_front();
    --free_slots_;
    ++active_;
    handed = true;
  }
  // Each worker waits for its own slot: wake them all (a handful) rather than one that may
  // not be the one given the job.
  if (handed) work_cv_.notify_all();
}

void Scheduler::submit(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard lock(mu_);
    check_room_locked();
    queue_.push_back(job);
    dispatch_locked();
  }
}

Scheduler::Reservation Scheduler::reserve() {
  std::lock_guard lock(mu_);
  check_room_locked();
  ++reserved_;
  return Reservation(this);
}

Scheduler::Reservation::~Reservation() {
  if (!s_) return;
  std::lock_guard lock(s_->mu_);
  --s_->reserved_;
}

Scheduler::Reservation& Scheduler::Reservation::operator=(Reservation&& o) noexcept {
  if (this != &o) {
    Reservation old(std::move(*this));  // gives this one's place back as it goes
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

void Scheduler::submit(const std::shared_ptr<Job>& job, Reservation&& r) {
  if (r.s_ != this) {
    submit(job);
    return;
  }
  {
    std::lock_guard lock(mu_);
    --reserved_;
    r.s_ = nullptr;
    if (draining_ || stopping_) throw ApiError(503, "server is shutting down", "", "shutting_down");
    queue_.push_back(job);
    dispatch_locked();
  }
}

void Scheduler::begin_drain() { draining_ = true; }

void Scheduler::cancel_all() {
  std::lock_guard lock(mu_);
  for (auto& job : queue_) job->cancel();
  for (auto& job : running_) if (job) job->cancel();
}

bool Scheduler::wait_idle(Job::Clock::time_point deadline) {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_until(lock, deadline, [&] { return queue_.empty() && active_.load() == 0; });
}

int Scheduler::queue_depth() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(queue_.size());
}

void Scheduler::worker_loop(int slot) {
  const auto i = static_cast<std::size_t>(slot);
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || running_[i]; });
    std::shared_ptr<Job> job = running_[i];
    Outcome out;
    if (stopping_) {
      if (!job) return;
      out.status = 503;  // handed out but not begun: it never runs
      out.message = "server is shutting down";
    } else {
      lock.unlock();
      out = run(slot, *job);
      lock.lock();
    }
    // Free the slot (and give it the next queued job) before the answer goes out: a client
    // that has its answer and asks again at once must find the slot free, not get a 429.
    running_[i].reset();
    ++free_slots_;
    --active_;
    dispatch_locked();
    // Delivered under this lock, so that wait_idle() sees no moment where every slot is
    // free but an answer is still undelivered. Job's lock nests inside this one, never the
    // other way round (a Job never calls into the scheduler).
    if (out.status != 0) {
      job->fail(out.status, std::move(out.message), std::move(out.param), std::move(out.code));
    } else {
      job->finish(std::move(out.result));
    }
    idle_cv_.notify_all();
    if (stopping_ && !running_[i]) return;
  }
}

Scheduler::Outcome Scheduler::run(int slot, Job& job) {
  Outcome out;
  if (job.cancelled()) {  // the client left while it waited
    metrics_.count_cancelled();
    out.result.finish = engine::FinishReason::Cancelled;
    return out;
  }
  bool first = true;
  auto last = Job::Clock::now();
  auto on_token = [&](const TokenEvent& ev) {
    const auto now = Job::Clock::now();
    if (first) {
      metrics_.observe_ttft(std::chrono::duration<double>(now - job.submitted()).count());
      first = false;
    } else {
      metrics_.observe_inter_token(std::chrono::duration<double>(now - last).count());
    }
    last = now;
    return job.push(ev);
  };
  try {
    out.result = backend_.generate(slot, job.prompt(), job.params(), on_token);
    metrics_.add_tokens(out.result.prompt_tokens, out.result.completion_tokens);
    if (out.result.finish == engine::FinishReason::Cancelled) metrics_.count_cancelled();
  } catch (const Error& e) {
    const ApiError a = ApiError::from(e, "generation failed: ");  // the kind decides the status
    out.status = a.status();
    out.message = a.what();
    out.param = a.param();
    out.code = a.code();
  } catch (const std::exception& e) {
    out.status = 500;
    out.message = std::string("generation failed: ") + e.what();
  }
  return out;
}

}  // namespace ringlm::server
