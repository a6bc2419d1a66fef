// A per-request budget for guided-decoding work (token-mask computation and grammar steps),
// set for the current thread around one generation. A schema can compile quickly and still
// make every mask expensive (an anyOf of 3,000 string patterns took 82 s and +0.9 GB for 60
// tokens, holding its slot); with a budget the request fails with an error naming the budget
// instead (the server answers 400, or ends the stream with an error event).
//
// Time counts only the time spent inside the grammar index on this thread; memory counts the
// growth of the indexes' footprint (memory_bytes) during those calls. Without a budget on the
// thread, nothing is checked.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace ringlm::guided {

struct WorkBudget {
  std::chrono::milliseconds time{0};  // 0 = unlimited
  std::size_t memory_bytes = 0;       // 0 = unlimited
};

// Installs `budget` for this thread until destroyed (not nestable: the inner one replaces).
class ScopedWorkBudget {
 public:
  explicit ScopedWorkBudget(const WorkBudget& budget);
  ~ScopedWorkBudget();
  ScopedWorkBudget(const ScopedWorkBudget&) = delete;
  ScopedWorkBudget& operator=(const ScopedWorkBudget&) = delete;
};

namespace budget_detail {
struct State {
  bool active = false;
  WorkBudget budget;
  std::chrono::steady_clock::duration spent{0};
  std::size_t grown = 0;
  int depth = 0;  // nested enter() calls (an index call inside another)
  std::chrono::steady_clock::time_point entered;
  std::size_t memory_at_enter = 0;
  std::uint32_t ticks = 0;
};
}  // namespace budget_detail

// One request's budget kept across calls and threads: the batched loop advances many
// requests on one thread, so each binds its own account around its grammar calls
// (ScopedBudgetBinding) and the time and memory it has spent so far go with it.
class BudgetAccount {
 public:
  BudgetAccount() = default;
  explicit BudgetAccount(const WorkBudget& budget);

 private:
  friend class ScopedBudgetBinding;
  budget_detail::State state_;
};

// Makes `account` the thread's budget until destroyed, then stores what was spent back into
// it and restores the thread's previous budget (exceptions included).
class ScopedBudgetBinding {
 public:
  explicit ScopedBudgetBinding(BudgetAccount& account);
  ~ScopedBudgetBinding();
  ScopedBudgetBinding(const ScopedBudgetBinding&) = delete;
  ScopedBudgetBinding& operator=(const ScopedBudgetBinding&) = delete;

 private:
  BudgetAccount& account_;
  budget_detail::State saved_;
};

namespace budget_detail {
// Called by the grammar index: `enter`/`leave` bracket one index call (memory is the index's
// footprint at that moment); `tick` is called often inside long computations and throws
// ringlm::Error once the time budget is spent.
void enter(std::size_t memory_bytes);
void leave(std::size_t memory_bytes);
void tick();
bool active();
}  // namespace budget_detail

}  // namespace ringlm::guided
