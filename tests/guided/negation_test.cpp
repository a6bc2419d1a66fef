// Negation as a positive schema (src/guided/schema_negate.cpp): oneOf branches that may overlap
// are made exclusive by conjoining the negation of the others, exactly or not at all. Every
// instance below is checked against the validator: the grammar accepts it iff it is valid (and
// the mask agrees with accept at every token: accepts_text throws otherwise).
#include <gtest/gtest.h>

#include <random>

#include "guided/validator.h"
#include "util/error.h"
#include "random_walks.h"
#include "exact_checks.h"
#include "test_vocab.h"

namespace ringlm::guided {
namespace {

using testing::accepts_text;
using testing::compile_error;
using testing::expect_exact;
using testing::index_for;
using testing::mask_has;
using testing::synthetic_vocab;



// Random walks through the mask: every finished text validates.
void expect_generations_valid(const char* schema_text, unsigned seed) {
  testing::expect_random_walks_valid(Json::parse(schema_text), seed, 200, 20);
}

TEST(Negation, OverlappingClosedObjectsAreExclusive) {
  // {"a":7} matches both branches; {"a":1} only the first, {"a":7,"c":true} only the second.
  const char* schema = R"({"oneOf":[
      {"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"],
       "additionalProperties":false},
      {"type":"object","properties":{"a":{"type":"integer","minimum":5},"c":{"type":"boolean"}},
       "additionalProperties":false}]})";
  expect_exact(schema,
               {R"({"a":7})", R"({"a":1})", R"({"a":7,"b":"x"})", R"({"a":7,"c":true})", R"({"c":true})", R"({})",
                R"({"a":1,"c":true})", R"({"a":1,"b":"x"})", R"({"b":"x"})", R"({"a":"x"})", R"(5)"},
               /*valid=*/6);
  expect_generations_valid(schema, 1);
}

TEST(Negation, OverlappingStringsNumbersAndArraysAreExclusive) {
  expect_exact(R"({"oneOf":[{"type":"string","minLength":3},{"type":"string","pattern":"^a"}]})",
               {R"("abc")", R"("ab")", R"("xyz")", R"("xy")", R"("a")", R"("")", R"(1)"}, 3);
  expect_exact(R"({"oneOf":[{"type":"integer","minimum":0},{"type":"integer","maximum":10}]})",
               {R"(-5)", R"(0)", R"(5)", R"(10)", R"(11)", R"(150)", R"(-1)", R"("5")"}, 4);
  expect_exact(R"({"oneOf":[{"type":"array","items":{"type":"string"}},{"type":"array","maxItems":1}]})",
               {R"([])", R"(["a"])", R"([1])", R"(["a","b"])", R"(["a",1])", R"([1,2])", R"({})"}, 2);
  // A required discriminator that only one branch declares: the other branch loses "kind".
  expect_exact(R"({"type":"object","properties":{"kind":{"type":"string"},"n":{"type":"integer"}},
                   "oneOf":[{"required":["n"]},{"properties":{"kind":{"enum":["x","y"]}},"required":["kind"]}]})",
               {R"({"n":1})", R"({"kind":"x"})", R"({"kind":"z"})", R"({"kind":"x","n":1})", R"({"kind":"z","n":1})",
                R"({})"},
               3);
  expect_generations_valid(R"({"oneOf":[{"type":"string","minLength":3},{"type":"string","pattern":"^a"}]})", 2);
  expect_generations_valid(R"({"oneOf":[{"type":"array","items":{"type":"string"}},{"type":"array","maxItems":1}]})", 3);
}

TEST(Negation, NestedAndReferencedBranches) {
  // Branches through $ref, with a nested property schema to negate (b.c below 0, not a number, or
  // absent); b is closed in both, so "b has some other key" is never needed.
  const char* schema = R"({"$defs":{
        "p":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"number","minimum":0}},
                                                 "required":["c"],"additionalProperties":false}},
             "additionalProperties":false},
        "q":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{}},"additionalProperties":false},
                                           "d":{"const":"x"}},"additionalProperties":false}},
      "oneOf":[{"$ref":"#/$defs/p"},{"$ref":"#/$defs/q"}]})";
  expect_exact(schema,
               {R"({})", R"({"b":{"c":1}})", R"({"b":{"c":-1}})", R"({"b":{}})", R"({"d":"x"})", R"({"b":{"c":1},"d":"x"})",
                R"({"d":"y"})", R"({"b":{"c":1,"e":2}})"},
               4);
  expect_generations_valid(schema, 4);
}

TEST(Negation, NonNegatableOverlapIsRefusedNamingOneOfAndItsPointer) {
  struct Row {
    const char* schema;  // the schema of property "x"
    const char* why;     // what the error says has no exact negation
  };
  const Row rows[] = {
      {R"({"oneOf":[{"type":"array","items":{"type":"integer"}},{"type":"array","items":{"type":"boolean"},"uniqueItems":true}]})",
       "uniqueItems"},
      {R"({"oneOf":[{"type":"integer"},{"type":"number","minimum":0}]})", "numbers that are not integers"},
      {R"({"oneOf":[{"type":"integer","minimum":1},{"type":"integer","multipleOf":3}]})", "multipleOf"},
      // "Some key that is not an email address" is not a form the grammar has.
      {R"({"oneOf":[{"type":"object"},{"type":"object","propertyNames":{"format":"email"}}]})", "propertyNames"},
  };
  for (const Row& r : rows) {
    Json schema = {{"type", "object"}, {"properties", {{"x", Json::parse(r.schema)}}}};
    std::string msg = compile_error(schema);
    EXPECT_NE(msg.find("'oneOf' at /properties/x/oneOf"), std::string::npos) << r.schema << ": " << msg;
    EXPECT_NE(msg.find(r.why), std::string::npos) << r.schema << ": " << msg;
    // Lenient mode compiles it and says the exclusivity is left to the validator.
    CompileOptions lenient;
    lenient.mode = SchemaMode::kLenient;
    CompiledSchema cs = compile_schema(schema, lenient);
    ASSERT_EQ(cs.unenforced.size(), 1u) << r.schema;
    EXPECT_EQ(cs.unenforced[0].rfind("oneOf at /properties/x/oneOf: ", 0), 0u) << cs.unenforced[0];
  }
}

// An open object against a closed one: NOT closed is "some key outside the declared names and
// patterns" (with a value failing additionalProperties, when that is a schema), or for
// propertyNames with a pattern "some key not matching it" (the internal some-key keyword).
TEST(Negation, SomeOtherKeyIsExact) {
  expect_exact(R"({"oneOf":[{"type":"object","properties":{"a":{"type":"string"}}},
                            {"type":"object","properties":{"a":{},"b":{}},"additionalProperties":false}]})",
               {R"({})", R"({"a":"s"})", R"({"a":"s","c":2})", R"({"a":1})", R"({"c":1})", R"({"a":1,"c":1})",
                R"({"b":1})", R"({"a":"s","b":2,"c":3})"},
               4);
  const char* valued = R"({"oneOf":[{"type":"object","additionalProperties":{"type":"string"}},
                                    {"type":"object","properties":{"a":{"type":"boolean"}}}]})";
  expect_exact(valued,
               {R"({})", R"({"x":"s"})", R"({"x":1})", R"({"a":true})", R"({"a":"s"})", R"({"a":"s","x":1})",
                R"({"a":true,"x":"s"})"},
               4);
  expect_exact(R"({"oneOf":[{"type":"object","patternProperties":{"^x":{}},"additionalProperties":false},
                            {"type":"object"}]})",
               {R"({})", R"({"x1":1})", R"({"y":1})", R"({"x1":1,"y":2})"}, 2);
  expect_exact(R"({"oneOf":[{"type":"object","propertyNames":{"pattern":"^a"}},{"type":"object","maxProperties":1}]})",
               {R"({})", R"({"ab":1})", R"({"b":1})", R"({"ab":1,"ac":2})", R"({"b":1,"c":2})", R"({"ab":1,"b":2})"}, 2);
  // Branch 0 AND NOT 1 AND NOT 2 needs a key outside {a} and one outside {b}: two keys, or
  // one ("c") that is both.
  expect_exact(R"({"oneOf":[{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}},
                            {"type":"object","properties":{"a":{}},"additionalProperties":false},
                            {"type":"object","properties":{"b":{}},"additionalProperties":false}]})",
               {R"({})", R"({"a":"s"})", R"({"a":1})", R"({"a":"s","b":"t"})", R"({"c":1})", R"({"b":1})",
                R"({"b":"t"})", R"({"a":1,"b":1})"},
               4);
  // patternProperties with a schema: "some key outside `properties` matching the pattern with
  // a failing value"; propertyNames with lengths, values and `not`: one disjunct each.
  expect_exact(R"({"oneOf":[{"type":"object","properties":{"ab":{}},"patternProperties":{"^a":{"type":"string"}}},
                            {"type":"object","maxProperties":1}]})",
               {R"({})", R"({"ab":1})", R"({"ac":1})", R"({"ac":"s"})", R"({"b":1,"c":2})", R"({"ab":1,"ac":"s"})",
                R"({"ac":1,"b":2})"},
               3);
  expect_exact(R"({"oneOf":[{"type":"object","propertyNames":{"minLength":2,"maxLength":3}},
                            {"type":"object","maxProperties":1}]})",
               {R"({})", R"({"a":1})", R"({"ab":1})", R"({"abcd":1})", R"({"ab":1,"cd":2})", R"({"a":1,"cd":2})"}, 3);
  expect_exact(R"({"type":"object","not":{"propertyNames":{"not":{"const":"xyz"}}}})",
               {R"({})", R"({"xyz":1})", R"({"a":1})", R"({"xyz":1,"a":2})"}, 2);
  expect_exact(R"({"type":"object","not":{"propertyNames":{"enum":["a","b"]}}})",
               {R"({})", R"({"a":1})", R"({"c":1})", R"({"a":1,"c":2})"}, 2);
  expect_generations_valid(valued, 6);
}

// A format whose regex is exactly its check fails as "not matching the regex".
TEST(Negation, ExactFormatsNegateAsNotPattern) {
  const char* date = R"({"oneOf":[{"type":"string","format":"date"},{"type":"string","pattern":"^2"}]})";
  expect_exact(date, {R"("2020-02-29")", R"("2021-02-29")", R"("1999-12-31")", R"("2x")", R"("x")", R"("2019-13-01")"}, 4);
  expect_exact(R"({"oneOf":[{"type":"string","format":"ipv4"},{"type":"string","maxLength":8}]})",
               {R"("1.2.3.4")", R"("10.20.30.40")", R"("1.2.3.256")", R"("abc")"}, 2);
  expect_generations_valid(date, 9);
  // email and hostname generate a subset, but their checks are regular: NOT is exact ("@@a" is
  // an email address, its local part "@"; "ab." is a hostname, with its trailing dot; no string
  // over 253 characters is one).
  expect_exact(R"({"oneOf":[{"type":"string","format":"email"},{"type":"string","maxLength":3}]})",
               {R"("a@b")", R"("ab@cd.e")", R"("x")", R"("a..b@c")", R"("@@a")", R"(".a@b")"}, 2);
  std::string long_name = "\"a" + std::string(300, 'b') + "\"";
  expect_exact(R"({"oneOf":[{"type":"string","format":"hostname"},{"type":"string","pattern":"^a"}]})",
               {R"("ab.c")", R"("b.c")", R"("a_b")", R"("b_")", R"("ab.")", long_name.c_str()}, 3);
  // time / date-time are not exact (leap seconds are checked, not generated): still refused.
  std::string msg = compile_error(Json::parse(R"({"oneOf":[{"type":"string","format":"time"},{"type":"string","pattern":"^2"}]})"));
  EXPECT_NE(msg.find("keyword 'format' ('time')"), std::string::npos) << msg;
}

// Draft 4 has no `contains`: NOT items is the internal some-item keyword there, and a
// `contains` written in a draft-4 schema stays ignored.
TEST(Negation, Draft4ItemsNegationIsExact) {
  const char* schema = R"({"$schema":"http://json-schema.org/draft-04/schema#",
      "oneOf":[{"type":"array","items":{"type":"string"}},{"type":"array","maxItems":1,"contains":{"type":"null"}}]})";
  expect_exact(schema, {R"([])", R"(["a"])", R"([1])", R"(["a","b"])", R"(["a",1])", R"([1,2])", R"([null])"}, 3);
  expect_generations_valid(schema, 7);
}

// NOT oneOf with overlapping branches is "none, or two (or more) of them": here branch 1 holds
// for the strings of length 2+ not starting with a, and for "a".
TEST(Negation, NestedOverlappingOneOfIsNoneOrTwo) {
  const char* schema = R"({"oneOf":[{"type":"string","maxLength":3},{"oneOf":[{"minLength":2},{"pattern":"^a"}]}]})";
  expect_exact(schema, {R"("")", R"("b")", R"("bc")", R"("a")", R"("ab")", R"("bcde")", R"("abcd")", R"(1)"}, 4);
  expect_generations_valid(schema, 8);
}

TEST(Negation, InternalKeywordsValidate) {
  Validator v(Json::parse(R"({"properties":{"i":{"$ringlm:someItem":{"type":"integer"}},
      "k":{"$ringlm:someKey":{"except":["a"],"exceptPatterns":["^x"],"value":{"type":"integer"}}}}})"));
  EXPECT_TRUE(v.validate(Json::parse(R"({"i":["a",1]})")));
  EXPECT_FALSE(v.validate(Json::parse(R"({"i":["a"]})")));
  EXPECT_TRUE(v.validate(Json::parse(R"({"k":{"a":1,"b":2}})")));
  EXPECT_FALSE(v.validate(Json::parse(R"({"k":{"a":1,"x1":2,"b":"s"}})")));
}

// Two `not` forms the emitter mishandled before: a bare pattern holds for every non-string (so
// its `not` allows strings only), and `not: {type: integer}` among numbers leaves the
// non-integers, which no rule generates (2 was accepted).
TEST(Negation, NotPatternAndNotIntegerAreExact) {
  expect_exact(R"({"not":{"pattern":"^a"}})", {R"("b")", R"("ab")", R"(null)", R"(1)", R"([])", R"({})"}, 1);
  expect_exact(R"({"not":{"type":"string","pattern":"^a"}})", {R"("b")", R"("ab")", R"(null)", R"(1)"}, 3);
  expect_exact(R"({"type":["integer","string"],"not":{"type":"integer"}})", {R"("x")", R"(1)", R"(2)"}, 1);
  EXPECT_NE(compile_error(Json::parse(R"({"not":{"type":"integer"}})")).find("numbers that are not integers"),
            std::string::npos);
  std::string msg = compile_error(Json::parse(R"({"oneOf":[{"type":"number"},{"type":"integer"}]})"));
  EXPECT_NE(msg.find("'oneOf' at /oneOf"), std::string::npos) << msg;
}

// `not` forms beyond apply_not's compile as their negation, conjoined with the rest.
TEST(Negation, GeneralNotIsCompiledExactly) {
  expect_exact(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false,
                   "not":{"properties":{"a":{"minimum":3}},"required":["a"]}})",
               {R"({})", R"({"a":1})", R"({"a":3})", R"({"a":7})"}, 2);
  expect_exact(R"({"type":"array","items":{"type":"integer"},"not":{"items":{"maximum":5}}})",
               {R"([])", R"([1])", R"([1,9])", R"([9])"}, 2);
  expect_exact(R"({"type":"string","not":{"anyOf":[{"minLength":4},{"pattern":"x"}]}})",
               {R"("abc")", R"("abcd")", R"("ax")", R"("")"}, 2);
  expect_generations_valid(R"({"type":"string","not":{"anyOf":[{"minLength":4},{"pattern":"x"}]}})", 5);
  std::string msg = compile_error(Json::parse(R"({"type":"object","properties":{"a":{"not":{"type":"array","uniqueItems":true}}}})"));
  EXPECT_NE(msg.find("'not' at /properties/a/not"), std::string::npos) << msg;
  EXPECT_NE(msg.find("uniqueItems"), std::string::npos) << msg;
}

TEST(Negation, CasesAreBoundedByCompileLimits) {
  // Branch 0 AND NOT branch 1 AND NOT branch 2: 2 x 2 alternatives (a < 0 or b < 0; a > 9 or b > 9).
  const char* text = R"({"oneOf":[
      {"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"additionalProperties":false},
      {"type":"object","properties":{"a":{"minimum":0},"b":{"minimum":0}},"additionalProperties":false},
      {"type":"object","properties":{"a":{"maximum":9},"b":{"maximum":9}},"additionalProperties":false}]})";
  Json schema = Json::parse(text);
  EXPECT_EQ(compile_error(schema), "");
  CompileOptions tight;
  tight.limits.negation_cases = 3;
  std::string msg = compile_error(schema, tight);
  EXPECT_NE(msg.find("'oneOf' at /oneOf"), std::string::npos) << msg;
  EXPECT_NE(msg.find("more than 3 alternatives"), std::string::npos) << msg;
  tight = {};
  tight.limits.negation_size = 2;
  msg = compile_error(schema, tight);
  EXPECT_NE(msg.find("more than 2 subschemas"), std::string::npos) << msg;
  expect_exact(text, {R"({"a":5,"b":5})", R"({"a":-1,"b":5})", R"({"a":-1,"b":-1})", R"({"a":10,"b":-1})",
                      R"({"a":10,"b":5})", R"({"a":20,"b":20})", R"({"a":-1,"b":10})", R"({"a":"x","b":10})",
                      R"({"a":"x"})", R"({})"},
               3);
}

}  // namespace
}  // namespace ringlm::guided
