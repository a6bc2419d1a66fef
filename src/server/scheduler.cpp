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

Scheduler::Scheduler(Backend& backend, int queue_limit, Metrics& metrics)
    : backend_(backend), metrics_(metrics), queue_limit_(queue_limit < 0 ? 0 : queue_limit) {
  const int n = backend.slots();
  if (n < 1) fail("backend reports ", n, " slots; at least 1 is needed");
  running_.resize(static_cast<std::size_t>(n));
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
  // Jobs that an idle worker will pick up at once do not count against the queue.
  if (static_cast<int>(queue_.size()) + reserved_ >= queue_limit_ + idle_workers_) {
    metrics_.count_rejected_queue_full();
    throw ApiError(429, "server is busy: all " + std::to_string(slots()) + " slots are in use and " +
                            std::to_string(queue_limit_) + " requests are already waiting",
                   "", "queue_full");
  }
}

void Scheduler::submit(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard lock(mu_);
    check_room_locked();
    queue_.push_back(job);
  }
  work_cv_.notify_one();
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
  }
  work_cv_.notify_one();
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
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      ++idle_workers_;
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      --idle_workers_;
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      running_[static_cast<std::size_t>(slot)] = job;
      ++active_;
    }
    run(slot, *job);
    {
      std::lock_guard lock(mu_);
      running_[static_cast<std::size_t>(slot)].reset();
      --active_;
    }
    idle_cv_.notify_all();
  }
}

void Scheduler::run(int slot, Job& job) {
  if (job.cancelled()) {  // the client left while it waited
    metrics_.count_cancelled();
    GenerationResult r;
    r.finish = engine::FinishReason::Cancelled;
    job.finish(std::move(r));
    return;
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
    GenerationResult r = backend_.generate(slot, job.prompt(), job.params(), on_token);
    metrics_.add_tokens(r.prompt_tokens, r.completion_tokens);
    if (r.finish == engine::FinishReason::Cancelled) metrics_.count_cancelled();
    job.finish(std::move(r));
  } catch (const Error& e) {
    const ApiError a = ApiError::from(e, "generation failed: ");  // the kind decides the status
    job.fail(a.status(), a.what(), a.param(), a.code());
  } catch (const std::exception& e) {
    job.fail(500, std::string("generation failed: ") + e.what());
  }
}

}  // namespace ringlm::server
