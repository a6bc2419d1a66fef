// Exact forms of keywords that used to be refused (issue #16, JSONSchemaBench), one group of
// tests per form. Regex semantics are checked against the answers ECMAScript gives; schemas
// against the validator both ways (accepted iff valid, and the mask agrees with accept at
// every token), and what stays refused still names its keyword and pointer.
#include <gtest/gtest.h>

#include "guided/regex.h"
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
using testing::synthetic_vocab;

bool search(const char* pattern, const char* text) {
  return compile_regex(pattern, /*search_semantics=*/true).matches(utf8_to_u32(text));
}



// `^` / `$` inside a pattern: assertions at the start / end of the input.
TEST(RegexAnchors, InnerAnchorsAreAssertions) {
  // The JSONSchemaBench shapes: "empty, or 1..3 words".
  const char* words = R"(^$|(^(?:\S+\s+){0,2}\S+$))";
  EXPECT_TRUE(search(words, ""));
  EXPECT_TRUE(search(words, "a"));
  EXPECT_TRUE(search(words, "a b c"));
  EXPECT_FALSE(search(words, "a b c d"));
  EXPECT_FALSE(search(words, " a"));
  EXPECT_FALSE(search(words, "a "));
  // Anchors on some alternatives of a group only.
  EXPECT_TRUE(search("(^Hpt_|^Int_|_Armour_)", "Hpt_x"));
  EXPECT_TRUE(search("(^Hpt_|^Int_|_Armour_)", "x_Armour_y"));
  EXPECT_FALSE(search("(^Hpt_|^Int_|_Armour_)", "xHpt_"));
  EXPECT_TRUE(search("(^gs://(.+))|(^https://(.+))", "gs://b"));
  EXPECT_FALSE(search("(^gs://(.+))|(^https://(.+))", "x gs://b"));
  // `$` inside a group: empty, or a first character other than a comma.
  EXPECT_TRUE(search("^([^,]|$)", ""));
  EXPECT_TRUE(search("^([^,]|$)", "a,b"));
  EXPECT_FALSE(search("^([^,]|$)", ",a"));
  // An anchor in the middle of a concatenation: only the empty string, or nothing.
  EXPECT_TRUE(search("^$[a-z]*$", ""));
  EXPECT_FALSE(search("^$[a-z]*$", "a"));
  EXPECT_FALSE(search("a^b", "ab"));
  EXPECT_FALSE(search("a^b", "a^b"));
  EXPECT_FALSE(search("a$b", "ab"));
  EXPECT_TRUE(search("$^", ""));
  EXPECT_FALSE(search("$^", "a"));
  EXPECT_TRUE(search("(a|^)b", "b"));
  EXPECT_TRUE(search("(a|^)b", "xab"));
  EXPECT_FALSE(search("(a|^)b", "xb"));
  EXPECT_TRUE(search("a($|b)", "xa"));
  EXPECT_TRUE(search("a($|b)", "abx"));
  EXPECT_FALSE(search("a($|b)", "ax"));
  // Patterns anchored only at the ends of their top-level alternatives are unchanged.
  EXPECT_TRUE(search("^a$|b", "xbx"));
  EXPECT_FALSE(search("^a$|b", "ax"));
  // A quantified anchor is a syntax error in ECMAScript ("nothing to repeat"): refused.
  EXPECT_THROW(compile_regex("a($+)", true), Error);
  EXPECT_THROW(compile_regex("(^*a)", true), Error);
  EXPECT_THROW(compile_regex("(^{2}a)", true), Error);
}

TEST(RegexAnchors, SchemasWithInnerAnchorsAreExact) {
  expect_exact(R"j({"type":"string","pattern":"^$|(^(?:\\S+\\s+){0,2}\\S+$)"})j",
               {R"("")", R"("a")", R"("a b")", R"("a b c")", R"("a b c d")", R"(" a")", R"("a ")", R"("a  b")"}, 5);
  expect_exact(R"j({"type":"object","properties":{"name":{"type":"string","pattern":"^([^,]|$)"}}})j",
               {R"({"name":""})", R"({"name":"a,"})", R"({"name":",a"})", R"({"name":","})", R"({})"}, 3);
  // A short maxLength makes random walks close their strings.
  testing::expect_random_walks_valid(Json::parse(R"j({"type":"string","pattern":"(^ab|^c|d$)","maxLength":4})j"), 5,
                                     40, 20);
}

// Overlapping patternProperties: a key owes the schema of every pattern it matches.
TEST(OverlappingPatternProperties, KeyOwesEveryMatchingPattern) {
  // "ab" matches both patterns: an integer >= 5; "a..." an integer; "...b" >= 5 if a number;
  // other keys strings.
  const char* schema = R"({"type":"object","patternProperties":{"^a":{"type":"integer"},"b$":{"minimum":5}},
                           "additionalProperties":{"type":"string"}})";
  expect_exact(schema,
               {R"({"ab":7})", R"({"ab":3})", R"({"ab":"x"})", R"({"a":3})", R"({"a":"x"})", R"({"b":3})",
                R"({"b":"x"})", R"({"b":7.5})", R"({"c":"x"})", R"({"c":1})", R"({"ab":7,"c":"x"})",
                R"({"ab":7,"a":1,"b":9})", R"({"ab":7,"a":1,"b":2})"},
               7);
  testing::expect_random_walks_valid(Json::parse(schema), 7, 60, 10);
  // A `false` pattern forbids the keys it matches, whatever else they match; declared
  // properties get every matching pattern too.
  expect_exact(R"({"type":"object","properties":{"xa":{"type":"integer"}},
                   "patternProperties":{".*":{"type":"integer"},"a":{"maximum":3},"^z":false}})",
               {R"({"xa":2})", R"({"xa":5})", R"({"b":5})", R"({"ba":5})", R"({"ba":1})", R"({"z":1})", R"({"za":1})",
                R"({"b":"s"})", R"({})"},
               4);
  // Literal keys inside a catch-all pattern (JSONSchemaBench Github_hard---o58639's shape).
  expect_exact(R"({"type":"object","patternProperties":{".*":{"type":"object"},"^exec$":{"required":["k"]}}})",
               {R"({"exec":{"k":1}})", R"({"exec":{}})", R"({"other":{}})", R"({"other":1})", R"({"exec":1})"}, 2);
}

TEST(OverlappingPatternProperties, TooManyKeyClassesAreRefusedByName) {
  // Six unanchored one-letter patterns overlap every way: 63 key classes.
  Json schema = Json::parse(R"({"type":"object","patternProperties":{"a":{},"b":{},"c":{},"d":{},"e":{},"f":{}}})");
  std::string msg = compile_error(schema);
  EXPECT_NE(msg.find("'patternProperties' at /patternProperties"), std::string::npos) << msg;
  EXPECT_NE(msg.find("classes"), std::string::npos) << msg;
}

// patternProperties met with properties in an allOf.
TEST(PatternPropertiesInAllOf, MergedWithPropertiesExactly) {
  // Declared "x" owes ^x's schema; "y..." keys owe ^y's; the rest anything.
  expect_exact(R"({"allOf":[{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]},
                            {"patternProperties":{"^x":{"minimum":3},"^y":{"type":"string"}}}]})",
               {R"({"x":5})", R"({"x":2})", R"({"x":5,"y":"s"})", R"({"x":5,"y":1})", R"({"x":5,"yy":"s"})",
                R"({"x":5,"z":1})", R"({"y":"s"})", R"({"x":5,"xz":1})", R"({"x":5,"xz":"s"})"},
               5);
  // Both sides with patterns (JSONSchemaBench Handwritten---test.NoType's shape).
  expect_exact(R"({"type":"object","allOf":[{"patternProperties":{"a":{"type":"number","minimum":10}}},
                                             {"patternProperties":{"b":{"type":"number","minimum":3}}}],
                   "minProperties":1})",
               {R"({"a":10})", R"({"a":5})", R"({"b":5})", R"({"ab":5})", R"({"ab":12})", R"({"c":"x"})", R"({})"}, 4);
  // A key matching one side's pattern but owing the other side's additionalProperties has no
  // merged form: still refused by name.
  std::string msg = compile_error(Json::parse(
      R"({"type":"object","properties":{"a":{"allOf":[{"patternProperties":{"^p":{}}},{"additionalProperties":false}]}}})"));
  EXPECT_NE(msg.find("'patternProperties'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(" at /properties/a"), std::string::npos) << msg;
}

// propertyNames through `$ref` and with `enum` / `const` (JSONSchemaBench: a `$defs` key
// schema reused by several objects; an enum of pipette names).
TEST(PropertyNames, RefAndEnumAreKeyLanguages) {
  expect_exact(R"({"$defs":{"name":{"type":"string","pattern":"^[A-Z][a-z]+$"}},
                   "type":"object","propertyNames":{"$ref":"#/$defs/name"},"additionalProperties":{"type":"integer"}})",
               {R"({"Ab":1})", R"({"ab":1})", R"({"Ab":1,"Cd":2})", R"({"A":1})", R"({})", R"({"Ab":"x"})"}, 3);
  expect_exact(R"({"$defs":{"dir":{"enum":["N","NE",3,null]}},
                   "type":"object","propertyNames":{"$ref":"#/$defs/dir"}})",
               {R"({"N":1})", R"({"N":2,"NE":1})", R"({"E":1})", R"({"3":1})", R"({})", R"({"N":1,"NE":{}})"}, 4);
  expect_exact(R"({"type":"object","propertyNames":{"const":"k","maxLength":3},"minProperties":1})",
               {R"({"k":1})", R"({"kk":1})", R"({})"}, 1);
  // In 2019+ a `$ref` with siblings is an allOf, which the key language does not take: refused.
  std::string msg = compile_error(Json::parse(R"({"$defs":{"n":{"pattern":"^a"}},"type":"object",
                                                  "propertyNames":{"$ref":"#/$defs/n","not":{"const":"ab"}}})"));
  EXPECT_NE(msg.find("'propertyNames' at /propertyNames"), std::string::npos) << msg;
}

// Draft 4 counts only integer literals (within int64 / uint64) as integers, so "a number that
// is not an integer" is a regular language there: oneOf [integer, number] and `not: {type:
// integer}` compile exactly. Later drafts count 1.0 by its double value: still refused.
TEST(Draft4NonIntegers, OneOfIntegerAndNumberIsExact) {
  expect_exact(R"({"$schema":"http://json-schema.org/draft-04/schema#",
                   "oneOf":[{"type":"integer"},{"type":"string"},{"type":"number"}]})",
               {R"(1)", R"(-0)", R"(0)", R"(1.5)", R"(1.0)", R"(-2.25)", R"(1e2)", R"(1E-2)", R"(18446744073709551615)",
                R"(18446744073709551616)", R"(-9223372036854775808)", R"(-9223372036854775809)", R"("s")", R"(true)"},
               8);
  expect_exact(R"({"$schema":"http://json-schema.org/draft-04/schema#","type":"object",
                   "oneOf":[{"properties":{"v":{"type":"integer"}}},{"properties":{"v":{"type":"number"}}}]})",
               {R"({"v":1})", R"({"v":1.5})", R"({"v":"x"})", R"({})", R"({"v":2.0})"}, 2);
  expect_exact(R"({"$schema":"http://json-schema.org/draft-04/schema#","not":{"type":"integer"}})",
               {R"(1)", R"(1.5)", R"("x")", R"(null)", R"([1])", R"(7e1)"}, 5);
  testing::expect_random_walks_valid(
      Json::parse(R"({"$schema":"http://json-schema.org/draft-04/schema#","oneOf":[{"type":"integer"},{"type":"number"}]})"),
      11, 30, 20);
}

TEST(Draft4NonIntegers, WithBoundsAndMultipleOf) {
  expect_exact(R"({"$schema":"http://json-schema.org/draft-04/schema#",
                   "type":"number","minimum":1,"maximum":3,"not":{"type":"integer"}})",
               {R"(1)", R"(1.5)", R"(2.0)", R"(3)", R"(3.5)", R"(0.5)", R"(2.99)", R"(1.0)"}, 4);
  expect_exact(R"({"$schema":"http://json-schema.org/draft-04/schema#",
                   "type":"number","multipleOf":0.5,"not":{"type":"integer"}})",
               {R"(1)", R"(1.5)", R"(2.0)", R"(1.25)", R"(-0.5)", R"("x")"}, 3);
  expect_exact(R"({"$schema":"http://json-schema.org/draft-04/schema#",
                   "oneOf":[{"type":"integer"},{"type":"number","exclusiveMinimum":true,"minimum":0}]})",
               {R"(-1)", R"(0)", R"(1)", R"(0.5)", R"(-0.5)", R"(0.0)", R"(2.0)"}, 4);
}

TEST(Draft4NonIntegers, LaterDraftsStayRefused) {
  std::string msg = compile_error(Json::parse(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})"));
  EXPECT_NE(msg.find("'oneOf' at /oneOf"), std::string::npos) << msg;
  EXPECT_NE(msg.find("numbers that are not integers"), std::string::npos) << msg;
  msg = compile_error(Json::parse(R"({"$schema":"http://json-schema.org/draft-07/schema#",
                                      "type":"number","not":{"type":"integer"}})"));
  EXPECT_NE(msg.find("'not' at /not"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ringlm::guided
