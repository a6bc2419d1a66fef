#include "guided/work_budget.h"

#include "util/error.h"

namespace ringlm::guided {

namespace {

using Clock = std::chrono::steady_clock;

using budget_detail::State;

thread_local State t_state;

[[noreturn]] void over_time(const WorkBudget& b) {
  fail("guided decoding: the request spent more than its budget of ", b.time.count(),
       " ms computing token masks for its schema (--mask-budget-ms); simplify the schema");
}

}  // namespace

ScopedWorkBudget::ScopedWorkBudget(const WorkBudget& budget) {
  t_state = State{};
  t_state.active = budget.time.count() > 0 || budget.memory_bytes > 0;
  t_state.budget = budget;
}

ScopedWorkBudget::~ScopedWorkBudget() { t_state = State{}; }

BudgetAccount::BudgetAccount(const WorkBudget& budget) {
  state_.active = budget.time.count() > 0 || budget.memory_bytes > 0;
  state_.budget = budget;
}

ScopedBudgetBinding::ScopedBudgetBinding(BudgetAccount& account) : account_(account), saved_(t_state) {
  t_state = account_.state_;
}

ScopedBudgetBinding::~ScopedBudgetBinding() {
  t_state.depth = 0;  // an exception may have left an index call open
  account_.state_ = t_state;
  t_state = saved_;
}

namespace budget_detail {

bool active() { return t_state.active; }

void enter(std::size_t memory_bytes) {
  State& s = t_state;
  if (!s.active || s.depth++ > 0) return;
  s.entered = Clock::now();
  s.memory_at_enter = memory_bytes;
}

void leave(std::size_t memory_bytes) {
  State& s = t_state;
  if (!s.active || --s.depth > 0) return;
  s.spent += Clock::now() - s.entered;
  if (memory_bytes > s.memory_at_enter) s.grown += memory_bytes - s.memory_at_enter;
  if (s.budget.memory_bytes > 0 && s.grown > s.budget.memory_bytes) {
    const std::size_t mb = s.budget.memory_bytes >> 20;
    s.active = false;  // report once
    fail("guided decoding: the request grew the grammar caches by more than its budget of ", mb,
         " MB (--mask-budget-mb); simplify the schema");
  }
  if (s.budget.time.count() > 0 && s.spent > s.budget.time) {
    s.active = false;
    over_time(s.budget);
  }
}

void tick() {
  State& s = t_state;
  if (!s.active || s.depth == 0 || s.budget.time.count() == 0 || (++s.ticks & 1023) != 0) return;
  if (s.spent + (Clock::now() - s.entered) > s.budget.time) {
    s.active = false;
    s.depth = 0;
    over_time(s.budget);
  }
}

}  // namespace budget_detail

}  // namespace ringlm::guided
