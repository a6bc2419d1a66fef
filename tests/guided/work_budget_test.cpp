// Per-request budgets for guided-decoding work (guided/work_budget.h): a request over its time
// or memory budget fails with an error naming the budget; without a budget nothing changes.
#include <gtest/gtest.h>

#include <string>

#include "guided/matcher.h"
#include "guided/schema_compiler.h"
#include "guided/work_budget.h"
#include "test_vocab.h"
#include "util/error.h"

namespace ringlm::guided {
namespace {

using testing::synthetic_vocab;

// The shape of the schema that held a slot for 82 s: an anyOf of thousands of string patterns.
Json pathological_schema(int n) {
  Json any = Json::array();
  for (int i = 0; i < n; ++i) any.push_back({{"type", "string"}, {"pattern", "^a" + std::to_string(i) + "[a-z]{2,9}b$"}});
  return {{"anyOf", any}};
}

std::string error_of(GrammarIndex& index, const WorkBudget& budget) {
  ScopedWorkBudget scope(budget);
  Matcher m(std::shared_ptr<GrammarIndex>(&index, [](GrammarIndex*) {}));
  std::vector<uint32_t> mask(index.vocab().mask_words());
  try {
    for (int step = 0; step < 8; ++step) {
      m.fill_mask(mask.data());
      uint32_t pick = 0;
      while (pick < index.vocab().size() && !((mask[pick >> 5] >> (pick & 31)) & 1u)) ++pick;
      if (pick == index.vocab().size() || !m.accept(pick)) break;
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(WorkBudget, TimeBudgetEndsAnExpensiveSchema) {
  GrammarIndex index(compile_schema(pathological_schema(3000)).grammar, synthetic_vocab());
  const std::string err = error_of(index, {std::chrono::milliseconds(1), 0});
  EXPECT_NE(err.find("--mask-budget-ms"), std::string::npos) << err;
  EXPECT_NE(err.find("1 ms"), std::string::npos) << err;
}

TEST(WorkBudget, MemoryBudgetCountsCacheGrowth) {
  GrammarIndex index(compile_schema(pathological_schema(50)).grammar, synthetic_vocab());
  const std::string err = error_of(index, {std::chrono::milliseconds(0), 1});
  EXPECT_NE(err.find("--mask-budget-mb"), std::string::npos) << err;
}

TEST(WorkBudget, NoBudgetOrAGenerousOneChangesNothing) {
  GrammarIndex a(compile_schema(pathological_schema(50)).grammar, synthetic_vocab());
  EXPECT_EQ(error_of(a, {}), "");
  GrammarIndex b(compile_schema(pathological_schema(50)).grammar, synthetic_vocab());
  EXPECT_EQ(error_of(b, {std::chrono::milliseconds(60000), size_t(1) << 30}), "");
  // The budget ends with its scope: the same thread is unbounded afterwards.
  GrammarIndex c(compile_schema(pathological_schema(50)).grammar, synthetic_vocab());
  { ScopedWorkBudget tight({std::chrono::milliseconds(0), 1}); }
  EXPECT_EQ(error_of(c, {}), "");
}

}  // namespace
}  // namespace ringlm::guided
