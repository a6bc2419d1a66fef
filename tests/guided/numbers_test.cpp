// Numbers in the grammar, exact both ways: integer bounds past 2^53 and 2^63 compared digit for
// digit (a bound written as a JSON integer is not rounded to a double), exponents that keep a
// number a finite double (no `1e999`), and exponent notation under bounds at 0 (`minimum: 0`
// admits `1e-06`). Each case is checked against the validator, not against expected strings
// alone: a text is accepted exactly when it is valid (within the documented digit caps).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "guided/validator.h"
#include "test_vocab.h"

namespace ringlm::guided {
namespace {

using testing::accepts_text;
using testing::index_for;
using testing::mask_has;
using testing::synthetic_vocab;

// Accepted by the grammar iff valid, for each text (all parse as JSON).
void expect_exact(const Json& schema, const std::vector<std::string>& texts) {
  auto idx = index_for(schema, synthetic_vocab());
  Validator v(schema);
  for (const auto& t : texts) {
    bool valid = v.validate(Json::parse(t));
    EXPECT_EQ(accepts_text(idx, t), valid) << schema.dump() << " on " << t << " (valid: " << valid << ")";
  }
}

TEST(Numbers, IntegerBoundsPast2To63AreExact) {
  // Snowplow---sp_151: `maximum: 9223372036854776000` (a uint64, above INT64_MAX).
  Json s = Json::parse(R"({"type":"integer","minimum":0,"maximum":9223372036854776000})");
  expect_exact(s, {"0", "9223372036854775807", "9223372036854775808", "9223372036854776000", "9223372036854776001",
                   "9223372036854776010", "9223372036854777000", "10000000000000000000", "-1"});
  auto idx = index_for(s, synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, "9223372036854776000"));
  EXPECT_FALSE(accepts_text(idx, "9223372036854776001"));

  Json u = Json::parse(R"({"type":"integer","exclusiveMaximum":18446744073709551615})");
  expect_exact(u, {"18446744073709551614", "18446744073709551615", "-5", "1844674407370955161"});
  auto iu = index_for(u, synthetic_vocab());
  EXPECT_TRUE(accepts_text(iu, "18446744073709551614"));
  EXPECT_FALSE(accepts_text(iu, "18446744073709551615"));
  EXPECT_FALSE(accepts_text(iu, "18446744073709551616"));  // 2^64: past the bound (no validator: a double)

  Json n = Json::parse(R"({"type":"integer","minimum":-9223372036854775808,"maximum":-9223372036854775000})");
  expect_exact(n, {"-9223372036854775808", "-9223372036854775000", "-9223372036854774999", "-9223372036854775001", "0"});
  EXPECT_FALSE(accepts_text(index_for(n, synthetic_vocab()), "-9223372036854775809"));
}

TEST(Numbers, RandomIntegersNearLargeBoundsAgreeWithValidator) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 6; ++round) {
    uint64_t lo = (rng() >> 2) + (uint64_t(1) << 62), hi = lo + (rng() % 100000);
    Json s = {{"type", "integer"}, {"minimum", lo}, {"maximum", hi}};
    if (round % 2) s = {{"type", "integer"}, {"exclusiveMinimum", lo}, {"exclusiveMaximum", hi}};
    std::vector<std::string> texts;
    for (int k = 0; k < 30; ++k) {
      uint64_t x = lo - 50000 + rng() % (hi - lo + 100000);
      texts.push_back(std::to_string(x));
    }
    texts.push_back(std::to_string(lo));
    texts.push_back(std::to_string(hi));
    expect_exact(s, texts);
  }
}

TEST(Numbers, ExponentsStayFiniteDoubles) {
  auto idx = index_for(Json::parse(R"({"type":"number"})"), synthetic_vocab());
  for (const char* ok : {"1e307", "12e306", "0.5e308", "-9.99e307", "1e-287", "0.00000000000000000001e-287", "1E+2", "1e007"})
    EXPECT_TRUE(accepts_text(idx, ok)) << ok;
  for (const char* bad : {"1e308", "12e307", "1e999", "-1e400", "1e-288", "1e0308"}) EXPECT_FALSE(accepts_text(idx, bad)) << bad;
  // Random generations through the mask: every number parses to a finite double.
  std::mt19937 rng(3);
  auto vocab = synthetic_vocab();
  int exponents = 0;
  for (int run = 0; run < 300; ++run) {
    Matcher m(idx);
    std::vector<uint32_t> mask(vocab->mask_words());
    std::string text;
    while (!m.is_stopped() && text.size() < 80) {
      m.fill_mask(mask.data());
      std::vector<uint32_t> allowed;
      for (uint32_t id = 0; id < vocab->size(); ++id)
        if (mask_has(mask, id) && (!vocab->is_stop(id) || rng() % 4 == 0)) allowed.push_back(id);
      if (allowed.empty()) break;
      uint32_t t = allowed[rng() % allowed.size()];
      ASSERT_TRUE(m.accept(t));
      text += vocab->bytes(t);
    }
    if (!m.is_stopped()) continue;
    double d = std::strtod(text.c_str(), nullptr);
    EXPECT_TRUE(std::isfinite(d)) << text;
    EXPECT_TRUE(std::isfinite(Json::parse(text).get<double>())) << text;
    exponents += text.find_first_of("eE") != std::string::npos;
  }
  EXPECT_GT(exponents, 10);  // the walk does reach exponents
}

TEST(Numbers, ZeroBoundsAdmitExponentNotation) {
  // Github_hard---o57716: `{"type":"number","minimum":0}` with the valid value 1e-06.
  std::vector<std::string> texts{"0", "1e-06", "-1e-06", "2.5E+3", "0.0e5", "0.001e2", "-3", "17", "-0.5e-3"};
  expect_exact(Json::parse(R"({"type":"number","minimum":0})"), texts);
  expect_exact(Json::parse(R"({"type":"number","exclusiveMinimum":0})"), texts);
  expect_exact(Json::parse(R"({"type":"number","maximum":0})"), {"0", "-1e-06", "1e-06", "-2.5E+3", "0.0e5", "5"});
  expect_exact(Json::parse(R"({"type":"number","exclusiveMaximum":0})"), {"0", "-1e-06", "1e-06", "-0.001e2", "0.0e5"});
  // draft 4 boolean form
  expect_exact(Json::parse(R"({"$schema":"http://json-schema.org/draft-04/schema#","type":"number","minimum":0,"exclusiveMinimum":true})"),
               {"0", "1e-06", "-1e-06", "0.0"});
}

}  // namespace
}  // namespace ringlm::guided
