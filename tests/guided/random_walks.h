// Random walks through a schema's token mask on the synthetic vocabulary (test_vocab.h): every
// text that reaches a stop token must validate against the schema with the validator.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "guided/validator.h"
#include "test_vocab.h"

namespace ringlm::guided::testing {

// 200 walks of at most max_steps tokens, stopping with probability 1/2 wherever a stop is
// allowed; at least min_finished of them must finish (strings under a pattern rarely close on
// a random walk, so some callers ask less).
inline void expect_random_walks_valid(const Json& schema, unsigned seed, int max_steps, int min_finished) {
  auto vocab = synthetic_vocab();
  auto idx = index_for(schema, vocab);
  Validator validator(schema);
  std::mt19937 rng(seed);
  int finished = 0;
  for (int run = 0; run < 200; ++run) {
    Matcher m(idx);
    std::vector<uint32_t> mask(vocab->mask_words());
    std::string text;
    for (int step = 0; step < max_steps && !m.is_stopped(); ++step) {
      m.fill_mask(mask.data());
      std::vector<uint32_t> allowed;
      for (uint32_t id = 0; id < vocab->size(); ++id)
        if (mask_has(mask, id)) allowed.push_back(id);
      ASSERT_FALSE(allowed.empty()) << text;
      uint32_t pick = allowed[rng() % allowed.size()];
      if (mask_has(mask, vocab->stop_ids()[0]) && rng() % 2 == 0) pick = vocab->stop_ids()[0];
      ASSERT_TRUE(m.accept(pick));
      text += vocab->bytes(pick);
    }
    if (!m.is_stopped()) continue;
    ++finished;
    Json parsed;
    try {
      parsed = Json::parse(text);
    } catch (const Json::out_of_range&) {
      continue;  // a number beyond double range
    }
    std::string why;
    EXPECT_TRUE(validator.validate(parsed, &why)) << schema.dump() << "\n  " << text << ": " << why;
  }
  EXPECT_GE(finished, min_finished) << schema.dump();
}

}  // namespace ringlm::guided::testing
