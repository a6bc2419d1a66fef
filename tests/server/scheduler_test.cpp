// Scheduler (server/scheduler.h) on its own, with a backend whose generations wait at a gate:
// which jobs hold a slot is then fixed by the test, not by thread timing. What is checked is
// the bookkeeping a client sees right after a call returns, with no waiting: a free slot takes
// a job at once, and a job's slot is free again by the time its answer can be read.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "server/api_error.h"
#include "server/fake_backend.h"
#include "server/metrics.h"
#include "server/scheduler.h"

namespace ringlm::server {
namespace {

// A FakeBackend whose generate() first waits for a permit (allow()), or for open().
class GatedBackend : public FakeBackend {
 public:
  explicit GatedBackend(int slots, bool open = false) : FakeBackend(options(slots)), open_(open) {}

  void allow(int n) {
    {
      std::lock_guard lock(mu_);
      permits_ += n;
    }
    cv_.notify_all();
  }
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

  engine::GenerationResult generate(int slot, const std::vector<std::int32_t>& prompt,
                                    const engine::GenerationParams& params,
                                    const engine::TokenCallback& on_token) override {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return open_ || permits_ > 0; });
      if (!open_) --permits_;
    }
    return FakeBackend::generate(slot, prompt, params, on_token);
  }

 private:
  static FakeBackendOptions options(int slots) {
    FakeBackendOptions o;
    o.slots = slots;
    o.token_delay = std::chrono::microseconds(0);
    return o;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  int permits_ = 0;
  bool open_ = false;
};

std::shared_ptr<Job> short_job() {
  engine::GenerationParams p;
  p.max_tokens = 2;
  return std::make_shared<Job>(std::vector<std::int32_t>{'h', 'i'}, p);
}

// Reads a job's events until it has finished (or 30 s pass: a hang fails, it does not block).
bool answered(Job& job) {
  std::vector<engine::TokenEvent> events;
  const auto deadline = Job::Clock::now() + std::chrono::seconds(30);
  while (Job::Clock::now() < deadline) {
    if (job.take_events(events, std::chrono::milliseconds(100))) return true;
  }
  return false;
}

int status_of_submit(Scheduler& s, const std::shared_ptr<Job>& job) {
  try {
    s.submit(job);
    return 0;
  } catch (const ApiError& e) {
    return e.status();
  }
}

// Opens the gate before the scheduler joins its workers, whatever the test's outcome.
struct Rig {
  explicit Rig(int slots, int queue, bool open = false)
      : backend(slots, open), scheduler(std::make_unique<Scheduler>(backend, queue, metrics)) {}
  ~Rig() {
    backend.open();
    scheduler.reset();
  }
  GatedBackend backend;
  Metrics metrics;
  std::unique_ptr<Scheduler> scheduler;
};

// With no queue, N slots take N jobs, each at the moment it is submitted, also straight after
// the scheduler is built and straight after the previous round's answers. Before the fix, a
// job counted as placed only once a worker had woken up for it: submits refused with 429
// while workers were still starting or between an answer and their next wait.
TEST(Scheduler, EveryFreeSlotTakesAJobAtOnceWithNoQueue) {
  constexpr int kSlots = 3;
  Rig rig(kSlots, /*queue=*/0);
  Scheduler& s = *rig.scheduler;
  for (int round = 0; round < 20; ++round) {
    std::vector<std::shared_ptr<Job>> jobs;
    for (int i = 0; i < kSlots; ++i) {
      jobs.push_back(short_job());
      ASSERT_EQ(status_of_submit(s, jobs.back()), 0) << "round " << round << ", job " << i << " was refused";
    }
    EXPECT_EQ(s.active(), kSlots) << "round " << round;
    EXPECT_EQ(s.queue_depth(), 0) << "round " << round;
    EXPECT_EQ(status_of_submit(s, short_job()), 429) << "round " << round << ": a job past every slot";
    rig.backend.allow(kSlots);
    for (auto& job : jobs) {
      ASSERT_TRUE(answered(*job)) << "round " << round;
      EXPECT_EQ(job->error_status(), 0) << job->error_message();
    }
    EXPECT_EQ(s.active(), 0) << "round " << round;
  }
  EXPECT_EQ(rig.backend.generations(), 20 * kSlots);
}

// Once a client holds its answer, the slot is free: active() is down and a new job is taken
// (not refused) at once. Before the fix the answer went out first and the slot was freed a
// moment later.
TEST(Scheduler, ASlotIsFreeAgainOnceItsJobIsAnswered) {
  Rig rig(/*slots=*/1, /*queue=*/0, /*open=*/true);
  Scheduler& s = *rig.scheduler;
  for (int i = 0; i < 200; ++i) {
    auto job = short_job();
    ASSERT_EQ(status_of_submit(s, job), 0) << "job " << i << " was refused right after the previous answer";
    ASSERT_TRUE(answered(*job)) << "job " << i;
    ASSERT_EQ(s.active(), 0) << "job " << i << " was answered while its slot was still taken";
  }
}

// A queued job takes the slot its predecessor frees before that predecessor's answer is out.
TEST(Scheduler, AQueuedJobTakesAFreedSlotAtOnce) {
  Rig rig(/*slots=*/1, /*queue=*/1);
  Scheduler& s = *rig.scheduler;
  for (int round = 0; round < 20; ++round) {
    auto first = short_job(), second = short_job();
    ASSERT_EQ(status_of_submit(s, first), 0);
    ASSERT_EQ(status_of_submit(s, second), 0);
    EXPECT_EQ(s.queue_depth(), 1);
    EXPECT_EQ(status_of_submit(s, short_job()), 429) << "round " << round << ": the queue's one place is taken";
    rig.backend.allow(1);
    ASSERT_TRUE(answered(*first));
    EXPECT_EQ(s.queue_depth(), 0) << "round " << round << ": the freed slot left a job waiting";
    EXPECT_EQ(s.active(), 1) << "round " << round;
    rig.backend.allow(1);
    ASSERT_TRUE(answered(*second));
    EXPECT_EQ(s.active(), 0);
  }
}

// Every job is answered when the scheduler goes: run (cut short or not), or refused with 503
// if it was still queued or handed a slot it had not begun on. None is left unanswered.
TEST(Scheduler, DestroyingItAnswersEveryJob) {
  auto rig = std::make_unique<Rig>(/*slots=*/2, /*queue=*/2);
  std::vector<std::shared_ptr<Job>> jobs;
  for (int i = 0; i < 4; ++i) {
    jobs.push_back(short_job());
    ASSERT_EQ(status_of_submit(*rig->scheduler, jobs.back()), 0);
  }
  rig.reset();  // opens the gate, then destroys the scheduler
  for (auto& job : jobs) {
    ASSERT_TRUE(answered(*job));
    EXPECT_TRUE(job->error_status() == 0 || job->error_status() == 503) << job->error_status() << " " << job->error_message();
  }
}

}  // namespace
}  // namespace ringlm::server
