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

// Draft 4 counts as integers only literals that parse as int64 / uint64; a 20-digit literal
// past 2^64 - 1 is a double there (not an integer), while later drafts count any integral
// value. The grammar follows the declared draft, with and without bounds and multipleOf.
TEST(Numbers, Draft4IntegersStopAtTheInt64AndUint64Range) {
  // ("-0" only unbounded: bounded integer languages leave it out, a stated restriction.)
  const std::vector<std::string> texts = {"0", "7", "18446744073709551615", "18446744073709551616",
                                          "99999999999999999999", "-9223372036854775808", "-9223372036854775809",
                                          "-10000000000000000000", "18446744073709551614", "-9223372036854775807"};
  const char* d4 = "http://json-schema.org/draft-04/schema#";
  for (const char* extra : {"", R"(, "minimum": -5)", R"(, "maximum": 5)", R"(, "multipleOf": 7)",
                            R"(, "multipleOf": 7, "minimum": 0)"}) {
    expect_exact(Json::parse(std::string(R"({"$schema": ")") + d4 + R"(", "type": "integer")" + extra + "}"), texts);
  }
  // Later drafts: any integral value, past 2^64 too. (Not with multipleOf: past 2^53 the
  // validator's double arithmetic and the grammar's exact remainders part ways.)
  for (const char* extra : {"", R"(, "minimum": -5)", R"(, "maximum": 5)"})
    expect_exact(Json::parse(std::string(R"({"type": "integer")") + extra + "}"), texts);
  expect_exact(Json::parse(R"({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"})"), {"-0"});
  auto idx = index_for(Json::parse(std::string(R"({"$schema": ")") + d4 + R"(", "type": "integer"})"), synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, "18446744073709551615"));
  EXPECT_FALSE(accepts_text(idx, "18446744073709551616"));
  EXPECT_FALSE(accepts_text(idx, "-9223372036854775809"));
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

// multipleOf as an exact decimal remainder automaton: every text in these lists is accepted
// exactly when the validator holds it valid (exponent forms, not generated under multipleOf,
// are left out; see docs/guided.md).
TEST(Numbers, MultipleOfDecimalsAndBoundedIntegersAreExact) {
  const std::vector<std::string> texts = {"0", "0.01", "0.07", "0.1", "0.10", "0.100", "0.105", "0.25", "0.5", "0.75",
                                          "1", "1.01", "1.001", "-0.25", "-0.3", "12", "24", "25", "36",
                                          "48.5", "-12", "99.99", "100.001", "7", "14", "10003", "10010",
                                          "9996", "10017", "3.3", "3.30", "3.33"};
  for (const char* schema : {R"({"type":"number","multipleOf":0.01,"minimum":0})",
                             R"({"type":"number","multipleOf":0.25})", R"({"type":"number","multipleOf":0.1})",
                             R"({"type":"integer","multipleOf":12,"minimum":0})",
                             R"({"type":"number","multipleOf":1,"minimum":0})",
                             R"({"type":"integer","multipleOf":7,"minimum":10000,"maximum":10010})",
                             R"({"type":"number","multipleOf":0.3,"maximum":10})",
                             R"({"type":"integer","multipleOf":0.5})",
                             R"({"allOf":[{"multipleOf":4}],"type":"integer","multipleOf":6,"maximum":100})",
                             R"({"allOf":[{"multipleOf":0.25}],"type":"number","multipleOf":0.1})"}) {
    expect_exact(Json::parse(schema), texts);
  }
  // Integers are generated without `.0` (a documented restriction); numbers keep it.
  expect_exact(Json::parse(R"({"type":"number","multipleOf":12})"), {"48.0", "48.00", "48.5", "1.0", "0.0"});
  // The merged allOf is the LCM: 12 and 36 are multiples of 4 and 6, 8 and 18 are not.
  auto idx = index_for(Json::parse(R"({"allOf":[{"multipleOf":4}],"type":"integer","multipleOf":6})"), synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, "36"));
  EXPECT_FALSE(accepts_text(idx, "8"));
  EXPECT_FALSE(accepts_text(idx, "18"));
}

TEST(Numbers, MultipleOfRandomDecimalsAgreeWithValidator) {
  std::mt19937 rng(16);
  Json s = Json::parse(R"({"type":"number","multipleOf":0.05,"minimum":-5,"maximum":5})");
  auto idx = index_for(s, synthetic_vocab());
  Validator v(s);
  for (int i = 0; i < 400; ++i) {
    int ip = int(rng() % 7);
    std::string t = (rng() % 2 ? "-" : "") + std::to_string(ip);
    int fd = int(rng() % 4);
    if (fd > 0) {
      t += ".";
      for (int k = 0; k < fd; ++k) t += char('0' + rng() % 10);
    }
    if (t == "-0" || t.rfind("-0.", 0) == 0) continue;  // minus zero forms: not generated by design
    bool valid = v.validate(Json::parse(t));
    EXPECT_EQ(accepts_text(idx, t), valid) << t;
  }
}

}  // namespace
}  // namespace ringlm::guided
