// Numbers in enum / const (and wherever a literal value is matched: contains, uniqueItems,
// values nested in arrays and objects) compared by value, the grammar and the validator alike:
// `{"enum": [2.0]}` takes `2`, `2.00`, `20e-1`, `0.2e1`, `2E0`. Each case is checked with the
// exact-form helper: a text is accepted exactly when the validator holds it valid, and the
// number of valid texts is pinned, so both kinds occur.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "exact_checks.h"
#include "guided/number_value.h"

namespace ringlm::guided {
namespace {

using testing::accepts_text;
using testing::compile_error;
using testing::expect_exact;
using testing::index_for;
using testing::synthetic_vocab;

TEST(NumberValues, IntegerValuedFloatsMatchEverySpelling) {
  // The two valid instances JSONSchemaBench's held-out half rejected: `{"enum": [2.0]}` and `2`.
  const std::vector<const char*> texts = {"2",    "2.0",   "2.00",    "20e-1", "0.2e1", "2E0",   "2e+0",
                                          "2e-0", "200E-2", "0.02e2", "2.000e000", "-2",  "20",    "0.2",
                                          "2.01", "21e-1",  "2e1",    "0.3e1",     "3"};
  expect_exact(R"({"enum": [2.0]})", texts, 11);
  expect_exact(R"({"const": 2})", texts, 11);
  expect_exact(R"({"type": "integer", "enum": [2, "2", true]})", texts, 11);
  // Draft 4 counts only integer literals as integers: `2.0` is not one there.
  expect_exact(R"({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "enum": [2.0]})",
               texts, 1);
  // Nested numbers too, each choice of kinds checked: [1, 2.0] fails `items: integer` in draft
  // 4 as written, [1, 2] passes; and a `not` that only all-integer items trip.
  expect_exact(R"({"$schema": "http://json-schema.org/draft-04/schema#", "enum": [[1, 2.0]],
                   "items": {"type": "integer"}})",
               {"[1,2]", "[1,2.0]", "[1.0,2]", "[1e0,2]"}, 1);
  expect_exact(R"({"$schema": "http://json-schema.org/draft-04/schema#", "enum": [[1, 1]],
                   "not": {"items": {"type": "integer"}}})",
               {"[1,1]", "[1.0,1]", "[1,1.0]", "[1.0,1.0]", "[1e0,10e-1]", "[2,1.0]"}, 4);
  expect_exact(R"({"enum": [-2.5, 40]})",
               {"-2.5", "-25e-1", "-0.25E1", "-2.50", "2.5", "-2.4", "40", "4e1", "4.0e+1", "400e-1", "40.00",
                "0.4e2", "4e2", "-40"},
               10);
}

TEST(NumberValues, NegativeZeroIsZero) {
  const std::vector<const char*> texts = {"0", "-0", "0.0", "-0.0", "0e5", "-0E-3", "0.000", "0e+000",
                                          "1", "-1e-300", "0.1", "1e-287"};
  expect_exact(R"({"const": 0})", texts, 8);
  expect_exact(R"({"const": -0.0})", texts, 8);
  expect_exact(R"({"enum": [0.0, "0"]})", texts, 8);
}

TEST(NumberValues, ExponentsAndFractions) {
  expect_exact(R"({"enum": [1e23, 1.5e-7, 12345.678]})",
               {"1e23", "1E+23", "10e22", "0.1e24", "10000000000000000000e4", "1.5e-7", "15e-8", "0.00000015",
                "0.000000150", "1.5E-07", "12345.678", "12345678e-3", "1.2345678e4", "12345.6780",
                "0.12345678e5", "1.5e-8", "12345.679", "1e22", "15e-7", "123456.78"},
               15);
  // 20 integer digits and 20 fraction digits up to the last significant one (the number
  // grammar's caps); trailing zeros after it are not counted.
  auto idx = index_for(Json::parse(R"({"const": 1.5})"), synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, "15000000000000000000e-19"));
  EXPECT_FALSE(accepts_text(idx, "150000000000000000000e-20"));  // 21 integer digits
  EXPECT_TRUE(accepts_text(idx, "0.00000000000000000015e19"));
  EXPECT_FALSE(accepts_text(idx, "0.000000000000000000015e20"));  // 21 fraction digits
  EXPECT_TRUE(accepts_text(idx, "1.50000000000000000000000000"));
}

// Past 2^53 the parser keeps an integer literal exactly and reads any other text as the nearest
// double, which stands for its shortest decimal: an integer no double holds equals only its
// integer literal, a double equals the texts of its shortest decimal.
TEST(NumberValues, LargeIntegersPast2To53) {
  expect_exact(R"({"const": 9007199254740993})",
               {"9007199254740993", "9007199254740993.0", "9.007199254740993e15", "9007199254740992",
                "9007199254740994"},
               1);
  expect_exact(R"({"const": 9007199254740992})",
               {"9007199254740992", "9007199254740992.0", "9.007199254740992e15", "90071992547409920e-1",
                "9007199254740993", "9007199254740991"},
               4);
  // 2^60 as an integer: its double reads back as 1152921504606847000, another value.
  expect_exact(R"({"const": 1152921504606846976})",
               {"1152921504606846976", "1152921504606846976.0", "1152921504606847000", "1.152921504606847e18"}, 1);
  // ... and as a double: the value is that shortest decimal.
  expect_exact(R"({"const": 1.152921504606847e18})",
               {"1152921504606847000", "1.152921504606847e18", "1152921504606847000.0", "1152921504606846976",
                "115292150460684700e1"},
               4);
  expect_exact(R"({"enum": [18446744073709551615, -9223372036854775808]})",
               {"18446744073709551615", "18446744073709551615.0", "18446744073709551616", "-9223372036854775808",
                "-9223372036854775808.0", "-9.223372036854775808e18"},
               2);
  // A text whose digits go past what a double holds, read as the same double, is valid but not
  // generated (docs/guided.md): the grammar is the stricter side there.
  auto idx = index_for(Json::parse(R"({"const": 2})"), synthetic_vocab());
  EXPECT_TRUE(Validator(Json::parse(R"({"const": 2})")).validate(Json::parse("2.0000000000000001")));
  EXPECT_FALSE(accepts_text(idx, "2.0000000000000001"));
}

TEST(NumberValues, UniqueItemsContainsAndNestedValues) {
  // 1 and 1.0 are one value: a unique array holds it once, in any spelling.
  expect_exact(R"({"type": "array", "items": {"enum": [1, 2.0, 1.0]}, "uniqueItems": true})",
               {"[1,2]", "[1.0,2]", "[2e0,10e-1]", "[1,1.0]", "[2.0,2]", "[2,1,1e0]", "[]", "[3]"}, 4);
  expect_exact(R"({"type": "array", "contains": {"const": 2}, "maxItems": 3})",
               {"[2.0]", "[20e-1,3]", "[3]", "[1,0.2e1]", "[]", "[2.1]"}, 3);
  expect_exact(R"({"enum": [[1, {"a": 2.5}], {"b": [0]}]})",
               {"[1,{\"a\":2.5}]", "[1.0,{\"a\":25e-1}]", "[1e0,{\"a\":2.50}]", "[1,{\"a\":2.4}]", "{\"b\":[-0.0]}",
                "{\"b\":[0e3]}", "{\"b\":[1]}", "[2,{\"a\":2.5}]"},
               5);
}

// The JSON Schema Test Suite's number-equality cases (enum.json, const.json), restated.
TEST(NumberValues, TestSuiteNumberEquality) {
  expect_exact(R"({"enum": [1, 2, 3]})", {"1", "1.0", "4", "true"}, 2);           // float and integer
  expect_exact(R"({"const": 1.0})", {"1", "1.0", "-1", "true"}, 2);               // and the other way
  expect_exact(R"({"enum": [[0]]})", {"[0]", "[0.0]", "[-0.0]", "[false]"}, 3);  // nested zeros
  expect_exact(R"({"const": {"a": 1}})", {"{\"a\":1.0}", "{\"a\":1}", "{\"a\":true}"}, 2);
  expect_exact(R"({"const": 9007199254740992})", {"9007199254740992", "9007199254740992.0"}, 2);
  expect_exact(R"({"enum": [false]})", {"0", "0.0", "false"}, 1);  // false is not 0
}

// Random values and random spellings of them (and of near values), each with at most 15
// significant digits so that every text reads back as its own value: accepted iff valid.
TEST(NumberValues, RandomSpellingsAgreeWithValidator) {
  std::mt19937 rng(34);
  auto digits = [&](int n) {
    std::string d(1, char('1' + rng() % 9));
    for (int i = 1; i < n; ++i) d += char('0' + rng() % 10);
    return d;
  };
  // A spelling of digits * 10^e: the point after some digit (or `0.` and zeros) and the
  // exponent that makes up for it, written in one of the allowed ways.
  auto spell = [&](const std::string& g, int e, bool negative) {
    int shift = int(rng() % 9) - 4;  // mantissa = g * 10^(e - shift), exponent = shift
    int point = int(g.size()) + e - shift;  // digits before the point
    std::string m = g;
    if (point <= 0) m = "0." + std::string(size_t(-point), '0') + m;
    else if (point >= int(m.size())) m += std::string(size_t(point - int(m.size())), '0');
    else m.insert(size_t(point), ".");
    if (m.find('.') != std::string::npos || rng() % 3 == 0) {
      if (m.find('.') == std::string::npos) m += ".";
      m += std::string(rng() % 3, '0');
      if (m.back() == '.') m += "0";
    }
    std::string t = (negative ? "-" : "") + m;
    if (shift != 0 || rng() % 4 == 0) {
      t += rng() % 2 ? "e" : "E";
      if (shift > 0 && rng() % 2) t += "+";
      if (shift < 0) t += "-";
      t += std::to_string(shift < 0 ? -shift : shift);
    }
    return t;
  };
  int valid_total = 0;
  for (int round = 0; round < 12; ++round) {
    Json values = Json::array();
    std::vector<std::pair<std::string, int>> forms;  // digits, exponent
    for (int k = 0; k < 3; ++k) {
      std::string g = digits(1 + int(rng() % 6));
      int e = int(rng() % 9) - 5;
      forms.emplace_back(g, e);
      values.push_back(Json::parse(g + "e" + std::to_string(e)));
    }
    Json schema = {{"enum", values}};
    ASSERT_EQ(compile_error(schema), "") << schema.dump();
    auto idx = index_for(schema, synthetic_vocab());
    Validator v(schema);
    for (int t = 0; t < 30; ++t) {
      auto [g, e] = forms[rng() % forms.size()];
      if (rng() % 3 == 0) g.back() = g.back() == '9' ? '8' : char(g.back() + 1);  // a near value
      std::string text = spell(g, e, rng() % 5 == 0);
      bool ok = v.validate(Json::parse(text));
      valid_total += ok;
      EXPECT_EQ(accepts_text(idx, text), ok) << schema.dump() << " on " << text << " (valid: " << ok << ")";
    }
  }
  EXPECT_GT(valid_total, 100);
}

TEST(NumberValues, ValidatorComparesDecimals) {
  EXPECT_TRUE(json_equal(Json::parse("2"), Json::parse("2.0")));
  EXPECT_TRUE(json_equal(Json::parse("0"), Json::parse("-0.0")));
  EXPECT_TRUE(json_equal(Json::parse("[1, {\"a\": 2}]"), Json::parse("[1.0, {\"a\": 20e-1}]")));
  EXPECT_FALSE(json_equal(Json::parse("9007199254740993"), Json::parse("9007199254740993.0")));
  EXPECT_TRUE(json_equal(Json::parse("1152921504606847000"), Json::parse("1152921504606846976.0")));
  EXPECT_FALSE(json_equal(Json::parse("1152921504606846976"), Json::parse("1152921504606846976.0")));
  EXPECT_TRUE(json_equal(Json::parse("18446744073709551615"), Json::parse("18446744073709551615")));
  EXPECT_FALSE(json_equal(Json::parse("18446744073709551615"), Json::parse("-1")));
  DecimalValue d = decimal_value(Json::parse("-12.50e3"));
  EXPECT_EQ(d, (DecimalValue{true, "125", 2}));
  EXPECT_TRUE(doubles_equal(decimal_value(Json::parse("9007199254740992"))));
  EXPECT_FALSE(doubles_equal(decimal_value(Json::parse("9007199254740993"))));
}

}  // namespace
}  // namespace ringlm::guided
