// Strict and lenient compilation (issue #16): in the default strict mode every assertion the
// grammar cannot enforce exactly is refused with an error naming the keyword and its JSON
// pointer; lenient mode compiles the schema and lists what only the validator checks. oneOf
// compiles strictly when its branches are provably disjoint, and is then exclusive.
#include <gtest/gtest.h>

#include <random>

#include "guided/validator.h"
#include "util/error.h"
#include "random_walks.h"
#include "test_vocab.h"

namespace ringlm::guided {
namespace {

using testing::accepts_text;
using testing::index_for;
using testing::mask_has;
using testing::synthetic_vocab;

std::string compile_error(const Json& schema, SchemaMode mode = SchemaMode::kStrict) {
  CompileOptions o;
  o.mode = mode;
  try {
    compile_schema(schema, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

CompiledSchema compile_lenient(const Json& schema) {
  CompileOptions o;
  o.mode = SchemaMode::kLenient;
  return compile_schema(schema, o);
}

// One refused keyword per row, nested under /properties/a (and one under $defs through $ref):
// the error names the keyword and its pointer.
TEST(SchemaMode, RefusedKeywordsNameKeywordAndPointer) {
  struct Row {
    const char* keyword;
    const char* schema;  // the schema of property "a"
  };
  const Row rows[] = {
      {"uniqueItems", R"({"type":"array","items":{"type":"number"},"uniqueItems":true})"},
      {"multipleOf", R"({"type":"number","multipleOf":1234.567})"},
      {"not", R"({"not":{"type":"array","uniqueItems":true}})"},
      {"pattern", R"({"type":"string","pattern":"(?=a)b"})"},
      {"patternProperties", R"({"type":"object","patternProperties":{"a\\b":{}}})"},
      {"unevaluatedProperties", R"({"type":"object","unevaluatedProperties":false})"},
      {"maxContains", R"({"type":"array","contains":{"const":1},"maxContains":1})"},
      {"if", R"({"if":{"minimum":3},"then":{"maximum":5}})"},
      {"oneOf", R"({"oneOf":[{"type":"integer"},{"minimum":0}]})"},
      {"format", R"({"type":"string","format":"regex"})"},
      {"propertyNames", R"({"type":"object","propertyNames":{"not":{"pattern":"^a"},"minLength":1}})"},
      {"$dynamicRef", R"({"$dynamicRef":"#x"})"},
      {"maxLength", R"({"type":"string","maxLength":1.5})"},
  };
  for (const Row& r : rows) {
    Json schema = {{"type", "object"}, {"properties", {{"a", Json::parse(r.schema)}}}};
    std::string msg = compile_error(schema);
    EXPECT_NE(msg.find(std::string("'") + r.keyword + "'"), std::string::npos) << r.keyword << ": " << msg;
    EXPECT_NE(msg.find(std::string(" at /properties/a/") + r.keyword), std::string::npos) << r.keyword << ": " << msg;
  }
  // Through a $ref: the pointer is where the keyword is written.
  Json via_ref = Json::parse(R"({"$defs":{"t":{"type":"array","items":{"type":"object"},"uniqueItems":true}},
                                 "type":"object","properties":{"a":{"$ref":"#/$defs/t"}}})");
  std::string msg = compile_error(via_ref);
  EXPECT_NE(msg.find("'uniqueItems' at /$defs/t/uniqueItems"), std::string::npos) << msg;
  // Root keyword.
  msg = compile_error(Json::parse(R"({"type":"array","items":{"type":"number"},"uniqueItems":true})"));
  EXPECT_NE(msg.find("'uniqueItems' at /uniqueItems"), std::string::npos) << msg;
}

TEST(SchemaMode, LenientListsWhatIsLeftToTheValidator) {
  Json schema = Json::parse(R"({"type":"object","properties":{
      "x":{"oneOf":[{"type":"integer"},{"type":"number","minimum":0}]},
      "r":{"type":"string","format":"regex"}},"required":["x","r"]})");
  EXPECT_NE(compile_error(schema).find("'oneOf' at /properties/x/oneOf"), std::string::npos);
  CompiledSchema cs = compile_lenient(schema);
  ASSERT_EQ(cs.unenforced.size(), 2u);
  EXPECT_EQ(cs.unenforced[0].rfind("oneOf at /properties/x/oneOf: ", 0), 0u) << cs.unenforced[0];
  EXPECT_EQ(cs.unenforced[1].rfind("format at /properties/r/format: ", 0), 0u) << cs.unenforced[1];
  EXPECT_EQ(cs.grammar.unenforced, cs.unenforced);
  // Lenient still enforces everything else: the required keys and types.
  auto idx = std::make_shared<GrammarIndex>(std::move(cs.grammar), synthetic_vocab());
  EXPECT_EQ(idx->unenforced().size(), 2u);
  EXPECT_TRUE(accepts_text(idx, R"({"x":5,"r":"a+"})"));
  EXPECT_FALSE(accepts_text(idx, R"({"x":"5","r":"a+"})"));
  EXPECT_FALSE(accepts_text(idx, R"({"r":"a+"})"));
  // A schema the grammar enforces exactly has nothing to report.
  EXPECT_TRUE(compile_lenient(Json::parse(R"({"type":"integer"})")).unenforced.empty());
}

TEST(SchemaMode, ParseSchemaMode) {
  EXPECT_EQ(parse_schema_mode("strict"), SchemaMode::kStrict);
  EXPECT_EQ(parse_schema_mode("lenient"), SchemaMode::kLenient);
  EXPECT_THROW(parse_schema_mode("loose"), Error);
}

// Random walks through the mask: every finished text validates (oneOf exclusivity included).
void expect_generations_valid(const Json& schema, unsigned seed, int min_finished = 100) {
  testing::expect_random_walks_valid(schema, seed, 300, min_finished);
}

TEST(SchemaMode, DisjointOneOfCompilesStrictlyAndIsExclusive) {
  const char* disjoint[] = {
      // by type
      R"({"oneOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]})",
      // by a required discriminator with different constants
      R"({"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"v":{"type":"integer"}},"required":["kind"]},
                   {"type":"object","properties":{"kind":{"const":"b"},"v":{"type":"string"}},"required":["kind"]}]})",
      // by values failing the other branch
      R"({"oneOf":[{"enum":[1,2,3]},{"type":"integer","minimum":10}]})",
      // a required property the other branch forbids
      R"({"oneOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false},
                   {"type":"object","properties":{"b":{"type":"integer"}},"required":["b"],"additionalProperties":false}]})",
  };
  for (const char* text : disjoint) {
    Json schema = Json::parse(text);
    EXPECT_EQ(compile_error(schema), "") << text;
    expect_generations_valid(schema, 3);
  }
  // Overlapping branches whose negation the grammar expresses are made exclusive: an object with
  // both "a" and "b" matches both branches, so it is invalid, and so is a string matching both.
  const char* negated[] = {
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
          "oneOf":[{"required":["a"]},{"required":["b"]}]})",
      R"({"type":"string","oneOf":[{"pattern":"^a"},{"pattern":"b$"}]})",
  };
  for (const char* text : negated) {
    Json schema = Json::parse(text);
    EXPECT_EQ(compile_error(schema), "") << text;
    expect_generations_valid(schema, 4, 3);
  }
  auto idx = index_for(Json::parse(negated[0]), synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, R"({"a":1})"));
  EXPECT_TRUE(accepts_text(idx, R"({"b":1})"));
  EXPECT_FALSE(accepts_text(idx, R"({"a":1,"b":2})"));
  auto sidx = index_for(Json::parse(negated[1]), synthetic_vocab());
  EXPECT_TRUE(accepts_text(sidx, R"("ax")"));
  EXPECT_FALSE(accepts_text(sidx, R"("ab")"));
  // Overlapping branches are refused strictly (an instance may match both: `5`).
  EXPECT_NE(compile_error(Json::parse(R"({"oneOf":[{"type":"integer"},{"type":"number","minimum":0}]})")).find("'oneOf'"),
            std::string::npos);
}

TEST(SchemaMode, RegularFormatsAreChecked) {
  // json-pointer, relative-json-pointer, duration and uri-reference are regular languages: the
  // grammar generates and the validator checks the same regex.
  struct Case {
    const char* format;
    const char* good;
    const char* bad;
  };
  const Case cases[] = {{"json-pointer", R"("/a/b~1c")", R"("a/b")"},
                        {"relative-json-pointer", R"("1/a")", R"("/a")"},
                        {"duration", R"("P1Y2M3DT4H5M6S")", R"("P1H")"},
                        {"uri-reference", R"("../a?b#c")", R"("1a:b")"}};
  for (const Case& c : cases) {
    Json schema = {{"type", "string"}, {"format", c.format}};
    EXPECT_EQ(compile_error(schema), "") << c.format;
    auto idx = index_for(schema, synthetic_vocab());
    Validator v(schema);
    EXPECT_TRUE(v.validate(Json::parse(c.good))) << c.format;
    EXPECT_FALSE(v.validate(Json::parse(c.bad))) << c.format;
    EXPECT_TRUE(accepts_text(idx, c.good)) << c.format;
    EXPECT_FALSE(accepts_text(idx, c.bad)) << c.format;
    expect_generations_valid(schema, 5);
  }
}

}  // namespace
}  // namespace ringlm::guided
