// The schema compiler's intermediate form (guided/schema_ir.h) and CompileLimits: what allOf
// merging adds beyond one value per keyword lives in typed lists, so user schemas cannot write
// it (the compiler once honoured private "x-conds" / "x-nots" / "x-patterns" / "x-formats"
// keywords found in user schemas); every compile bound is an option.
#include <gtest/gtest.h>

#include "guided/schema_ir.h"
#include "guided/validator.h"
#include "util/error.h"
#include "test_vocab.h"

namespace ringlm::guided {
namespace {

using testing::accepts_text;
using testing::index_for;
using testing::synthetic_vocab;

std::string compile_error(const Json& schema, const CompileOptions& options) {
  try {
    compile_schema(schema, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Each instance is accepted by the grammar exactly when the validator accepts it.
void expect_agrees(const Json& schema, const std::vector<std::pair<std::string, bool>>& cases) {
  auto idx = index_for(schema, synthetic_vocab());
  Validator validator(schema);
  for (const auto& [text, valid] : cases) {
    EXPECT_EQ(validator.validate(Json::parse(text)), valid) << schema.dump() << " on " << text;
    EXPECT_EQ(accepts_text(idx, text), valid) << schema.dump() << " on " << text;
  }
}

TEST(SchemaIr, UserPrivateKeywordsAreUnknownKeywords) {
  // Before the typed IR each of these restricted the grammar (and not the validator).
  expect_agrees(Json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "x-conds": [{"if": {"required": ["a"]}, "then": {"required": ["b"]}}]})"),
                {{R"({"a":1})", true}, {R"({"a":1,"b":2})", true}});
  expect_agrees(Json::parse(R"({"type": "string", "x-patterns": ["^b"]})"), {{R"("a")", true}, {R"("b")", true}});
  expect_agrees(Json::parse(R"({"type": "string", "x-nots": [{"const": "a"}]})"), {{R"("a")", true}});
  expect_agrees(Json::parse(R"({"type": "string", "x-formats": ["date"]})"), {{R"("a")", true}});
  // Inside allOf members too (merging used to append them to its own lists).
  expect_agrees(Json::parse(R"({"allOf": [{"type": "string", "pattern": "^a"}, {"x-patterns": ["b$"]}]})"),
                {{R"("ax")", true}, {R"("xb")", false}});
  expect_agrees(Json::parse(R"({"enum": ["a", "b"], "x-nots": [{"const": "a"}], "x-patterns": ["^b"]})"),
                {{R"("a")", true}, {R"("b")", true}});
}

TEST(SchemaIr, UnknownKeywordsWithDifferentValuesInAllOfAreIgnored) {
  // Unknown keywords are annotations: an allOf whose members describe themselves with different
  // "help" texts was refused ("unsupported keyword 'help' with different values inside allOf").
  const Json schema = Json::parse(R"({"allOf": [{"type": "object", "help": "one", "properties": {"a": {"type": "integer"}},
      "required": ["a"]}, {"help": "two", "x-order": 1, "properties": {"a": {"maximum": 3}}}]})");
  EXPECT_EQ(compile_error(schema, CompileOptions{}), "no error");
  expect_agrees(schema, {{R"({"a":1})", true}, {R"({"a":4})", false}, {R"({})", false}, {R"("x")", false}});
  // A known assertion that differs still cannot be merged blindly.
  EXPECT_NE(compile_error(Json::parse(R"({"allOf": [{"dependentRequired": {"a": ["b"]}}, {"dependentRequired": {"a": ["c"]}}]})"),
                          CompileOptions{}),
            "no error");
}

TEST(SchemaIr, InternalNegationKeywordsAreRefusedInUserSchemas) {
  // The compiler's own "$ringlm:someKey"/"$ringlm:someItem" (negations of additionalProperties
  // and draft-4 items) would be enforced if a user schema carried them; other validators ignore them.
  const std::string e = compile_error(
      Json::parse(R"({"type": "object", "properties": {"a": {"$ringlm:someItem": {"const": 1}}}})"), CompileOptions{});
  EXPECT_NE(e.find("'$ringlm:someItem'"), std::string::npos) << e;
  EXPECT_NE(e.find("/properties/a"), std::string::npos) << e;
  EXPECT_NE(compile_error(Json::parse(R"({"$ringlm:someKey": {"except": ["a"]}})"), CompileOptions{}), "no error");
}

TEST(SchemaIr, MergedAssertionsStayEnforced) {
  expect_agrees(Json::parse(R"({"allOf": [{"type": "string", "pattern": "^a"}, {"pattern": "b$"}]})"),
                {{R"("ab")", true}, {R"("axb")", true}, {R"("ax")", false}, {R"("xb")", false}});
  expect_agrees(Json::parse(R"({"allOf": [{"type": "string", "not": {"const": "a"}}, {"not": {"const": "b"}}]})"),
                {{R"("a")", false}, {R"("b")", false}, {R"("c")", true}});
  expect_agrees(Json::parse(R"({"allOf": [{"enum": ["ab", "ax", "xb"], "pattern": "^a"}, {"pattern": "b$"}]})"),
                {{R"("ab")", true}, {R"("ax")", false}, {R"("xb")", false}});
  expect_agrees(Json::parse(R"({"type": "object", "additionalProperties": false,
      "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
      "allOf": [{"if": {"required": ["a"]}, "then": {"required": ["b"]}},
                {"if": {"required": ["b"]}, "then": {"required": ["c"]}}]})"),
                {{R"({})", true}, {R"({"a":1})", false}, {R"({"a":1,"b":2})", false}, {R"({"a":1,"b":2,"c":3})", true},
                 {R"({"c":3})", true}});
}

TEST(SchemaIr, MergeKeepsOneValuePerKeywordAndListsTheRest) {
  schema::Node n;
  n.keywords = Json::parse(R"({"type": "string", "pattern": "^a", "not": {"const": "a"}, "format": "date"})");
  schema::merge_into(n, Json::parse(R"({"pattern": "b$", "not": {"const": "b"}, "format": "email",
      "if": {"required": ["x"]}, "then": {"minLength": 2}, "maxLength": 5})"), schema::no_extras());
  EXPECT_EQ(n.keywords["pattern"], "^a");
  EXPECT_EQ(n.keywords["maxLength"], 5);
  EXPECT_FALSE(n.keywords.contains("if"));
  ASSERT_EQ(n.extras.patterns.size(), 1u);
  EXPECT_EQ(n.extras.patterns[0], "b$");
  ASSERT_EQ(n.extras.nots.size(), 1u);
  EXPECT_EQ(n.extras.nots[0], Json::parse(R"({"const": "b"})"));
  ASSERT_EQ(n.extras.formats.size(), 1u);
  EXPECT_EQ(n.extras.formats[0], "email");
  ASSERT_EQ(n.extras.conditions.size(), 1u);
  EXPECT_TRUE(n.extras.conditions[0].contains("then"));
  for (auto it = n.keywords.begin(); it != n.keywords.end(); ++it) EXPECT_NE(it.key().rfind("x-", 0), 0u) << it.key();
  // A second merge appends after the first one's lists; a false member makes the node false.
  schema::Node m = n;
  schema::merge_into(m, Json::parse(R"({"type": "string"})"), n.extras);
  EXPECT_EQ(m.extras.patterns.size(), 2u);
  schema::merge_into(m, Json(false), schema::no_extras());
  EXPECT_EQ(m.keywords, Json::parse(R"({"not": {}})"));
  EXPECT_TRUE(m.extras.empty());
}

// A subschema written twice (the same inline oneOf under two properties, as JSON Schema Store
// files do) compiles once: the second place calls the first one's rule. Equal text only:
// a one-character difference must give a rule of its own.
TEST(SchemaIr, RepeatedSubschemasShareOneRule) {
  const std::string branch = R"({"oneOf": [
      {"type": "object", "additionalProperties": false, "required": ["kind", "path"],
       "properties": {"kind": {"enum": ["jq"]}, "path": {"type": "string"}, "skip": {"type": "array", "items": {"type": "string"}}}},
      {"type": "object", "additionalProperties": false, "required": ["kind"],
       "properties": {"kind": {"enum": ["git"]}, "depth": {"type": "integer", "minimum": 1}}}]})";
  auto states = [](const Json& s) { return compile_schema(s, CompileOptions{}).grammar.states.size(); };
  auto object = [](const std::string& props) {
    return Json::parse(R"({"type": "object", "additionalProperties": false, "properties": {)" + props + "}}");
  };
  const Json two = object(R"("a": )" + branch + R"(, "b": )" + branch);
  size_t n0 = states(object(R"("a": {"type": "integer"})")), n1 = states(object(R"("a": )" + branch));
  size_t n2 = states(two);
  // The second copy adds a key and a call, not the branch's states again.
  EXPECT_LT(n2 - n1, (n1 - n0) / 4) << n0 << " / " << n1 << " / " << n2 << " states with 0 / 1 / 2 copies";
  expect_agrees(two, {{R"({"a":{"kind":"jq","path":"x"},"b":{"kind":"git","depth":2}})", true},
                      {R"({"b":{"kind":"git","depth":0}})", false},
                      {R"({"b":{"kind":"jq"}})", false}});
  // The same shape with another enum value under "b": no sharing across different text.
  std::string other = branch;
  other.replace(other.find("\"git\""), 5, "\"svn\"");
  const Json differ = object(R"("a": )" + branch + R"(, "b": )" + other);
  expect_agrees(differ, {{R"({"a":{"kind":"git"},"b":{"kind":"svn"}})", true},
                         {R"({"b":{"kind":"git"}})", false},
                         {R"({"a":{"kind":"svn"}})", false}});
}

TEST(SchemaIr, CompileLimitsAreOptions) {
  CompileOptions o;
  const Json nested = Json::parse(R"({"type": "array", "items": {"type": "array", "items": {"type": "array",
      "items": {"type": "array", "items": {"type": "integer"}}}}})");
  EXPECT_EQ(compile_error(nested, o), "no error");
  o.limits.depth = 3;
  EXPECT_NE(compile_error(nested, o).find("deeper than 3 levels"), std::string::npos) << compile_error(nested, o);

  o = CompileOptions{};
  const Json items = Json::parse(R"({"type": "array", "items": {"type": "integer"}, "maxItems": 40})");
  EXPECT_EQ(compile_error(items, o), "no error");
  o.limits.count = 30;
  EXPECT_NE(compile_error(items, o).find("above 30"), std::string::npos) << compile_error(items, o);

  o = CompileOptions{};
  o.limits.grammar_states = 50;
  EXPECT_NE(compile_error(items, o).find("more than 50 states"), std::string::npos) << compile_error(items, o);

  o = CompileOptions{};
  const Json pattern = Json::parse(R"({"type": "string", "pattern": "^[a-z]{3}[0-9]{3}$"})");
  EXPECT_EQ(compile_error(pattern, o), "no error");
  o.limits.regex.dfa_states = 4;
  EXPECT_NE(compile_error(pattern, o).find("DFA states"), std::string::npos) << compile_error(pattern, o);

  o = CompileOptions{};
  const Json ifs = Json::parse(R"({"type": "object", "allOf": [
      {"if": {"properties": {"a": {"const": "x"}}}, "then": {"required": ["b"]}},
      {"if": {"properties": {"b": {"const": "y"}}}, "then": {"required": ["c"]}}]})");
  EXPECT_EQ(compile_error(ifs, o), "no error");
  o.limits.conditional_cases = 4;
  EXPECT_NE(compile_error(ifs, o).find("more than 4 cases"), std::string::npos) << compile_error(ifs, o);
}

}  // namespace
}  // namespace ringlm::guided
