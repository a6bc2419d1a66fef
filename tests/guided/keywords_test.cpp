// Keywords compiled by case analysis or counting: format ipv6, contains / minContains /
// maxContains, uniqueItems (finite item values; string items), if / then / else and dependentSchemas.
// Each is checked both ways against the validator: random generations through the mask always
// validate, and hand-written instances are accepted exactly when they validate.
#include <gtest/gtest.h>

#include <random>

#include "guided/formats.h"
#include "guided/regex.h"
#include "guided/validator.h"
#include "util/error.h"
#include "test_vocab.h"

namespace ringlm::guided {
namespace {

using testing::accepts_text;
using testing::index_for;
using testing::mask_has;
using testing::synthetic_vocab;

// Random walks through the mask: every finished text parses and validates; returns how many
// finished (so a test can insist that generation is not stuck).
int generate_and_validate(const Json& schema, int runs, unsigned seed) {
  auto vocab = synthetic_vocab();
  auto idx = index_for(schema, vocab);
  Validator validator(schema);
  std::mt19937 rng(seed);
  int completed = 0;
  for (int run = 0; run < runs; ++run) {
    Matcher m(idx);
    std::vector<uint32_t> mask(vocab->mask_words());
    std::string text;
    for (int step = 0; step < 300 && !m.is_stopped(); ++step) {
      m.fill_mask(mask.data());
      std::vector<uint32_t> allowed;
      for (uint32_t id = 0; id < vocab->size(); ++id)
        if (mask_has(mask, id)) allowed.push_back(id);
      if (allowed.empty()) {
        ADD_FAILURE() << "dead end after " << text;
        return completed;
      }
      uint32_t pick = allowed[rng() % allowed.size()];
      if (mask_has(mask, vocab->stop_ids()[0]) && rng() % 2 == 0) pick = vocab->stop_ids()[0];
      EXPECT_TRUE(m.accept(pick));
      text += vocab->bytes(pick);
    }
    if (!m.is_stopped()) continue;
    ++completed;
    Json parsed;
    try {
      parsed = Json::parse(text);
    } catch (const Json::out_of_range&) {
      continue;  // a number beyond double range (e.g. 5e+712): valid JSON text, unparseable here
    } catch (const std::exception&) {
      ADD_FAILURE() << "generated text does not parse: " << text;
      continue;
    }
    std::string why;
    EXPECT_TRUE(validator.validate(parsed, &why)) << text << ": " << why;
  }
  return completed;
}

// Each instance (written canonically, keys in schema order) is accepted iff it validates.
void expect_agrees(const Json& schema, const std::vector<std::string>& texts) {
  auto idx = index_for(schema, synthetic_vocab());
  Validator validator(schema);
  for (auto& t : texts) {
    bool valid = validator.validate(Json::parse(t));
    EXPECT_EQ(accepts_text(idx, t), valid) << t << " (valid: " << valid << ")";
  }
}

// ---------------------------------------------------------------- ipv6

TEST(Ipv6, RegexMatchesCheckExactly) {
  CpDfa dfa = compile_regex(*format_regex("ipv6"), true);
  std::mt19937 rng(7);
  const char* hex = "0123456789abcdefABCDEF";
  auto group = [&] {
    std::string g;
    int n = int(rng() % 6);  // 0..5 digits: 0 and 5 are invalid
    for (int i = 0; i < n; ++i) g += hex[rng() % 22];
    return g;
  };
  int valid = 0, invalid = 0;
  for (int k = 0; k < 20000; ++k) {
    std::string s;
    int groups = int(rng() % 10);
    int compress_at = int(rng() % 12);
    for (int i = 0; i < groups; ++i) {
      if (i == compress_at) s += "::";
      else if (i) s += ":";
      s += group();
    }
    if (compress_at == groups) s += "::";
    if (rng() % 5 == 0) s += (rng() % 2 ? ":" : "") + std::to_string(rng() % 300) + "." + std::to_string(rng() % 256) + "." +
                             std::to_string(rng() % 256) + "." + std::to_string(rng() % 260);
    if (rng() % 20 == 0 && !s.empty()) s[rng() % s.size()] = "g:.%1 "[rng() % 6];
    bool want = check_format("ipv6", s);
    EXPECT_EQ(dfa.matches(utf8_to_u32(s)), want) << s;
    (want ? valid : invalid)++;
  }
  EXPECT_GT(valid, 1000);
  EXPECT_GT(invalid, 1000);
  for (const char* s : {"::", "::1", "1::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:1.2.3.4", "::ffff:10.0.0.1", "1::8",
                        "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8"}) {
    EXPECT_TRUE(dfa.matches(utf8_to_u32(s))) << s;
  }
  for (const char* s : {":", ":::", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "1:2:3:4:5:6:7::8", "::01.2.3.4",
                        "1:2:3:4:5:6:7:1.2.3.4", "fe80::1%eth0"}) {
    EXPECT_FALSE(dfa.matches(utf8_to_u32(s))) << s;
  }
}

TEST(Ipv6, FormatCompilesAndGeneratesValidAddresses) {
  Json schema = Json::parse(R"({"type":"string","format":"ipv6"})");
  expect_agrees(schema, {R"("::1")", R"("2001:db8::ff00:42:8329")", R"("1:2:3:4:5:6:7:8")", R"("::ffff:1.2.3.4")",
                         R"("1:2:3:4:5:6:7:8:9")", R"("::g")", R"("1.2.3.4")", R"("")"});
  EXPECT_GT(generate_and_validate(schema, 40, 3), 20);
}

// ---------------------------------------------------------------- contains

TEST(Contains, AtLeastOneMatchingElement) {
  Json schema = Json::parse(R"({"type":"array","items":{"type":"integer"},"contains":{"minimum":10},"maxItems":4})");
  expect_agrees(schema, {"[10]", "[1,2,30]", "[11,1]", "[1,2,3]", "[]", "[1,2,3,4,50]", "[1,2,3,50]", "[\"a\",10]"});
  EXPECT_GT(generate_and_validate(schema, 60, 1), 20);
}

TEST(Contains, MinContainsAndUnboundedArrays) {
  Json schema = Json::parse(
      R"({"type":"array","items":{"enum":["a","b","c"]},"contains":{"const":"b"},"minContains":2,"minItems":3})");
  expect_agrees(schema, {R"(["b","b","a"])", R"(["b","a","b","c","c"])", R"(["b","b"])", R"(["b","a","c"])",
                         R"(["a","b","c","b"])", R"(["b","b","b","b"])"});
  EXPECT_GT(generate_and_validate(schema, 60, 2), 20);
  // minContains 0: contains asserts nothing.
  expect_agrees(Json::parse(R"({"items":{"type":"integer"},"contains":{"const":5},"minContains":0})"), {"[]", "[1]", "[5]"});
}

TEST(Contains, PrefixItemsAndMaxContains) {
  Json schema = Json::parse(R"({"prefixItems":[{"type":"string"},{"type":"integer"}],"items":false,
                                "contains":{"type":"integer"},"maxContains":2})");
  expect_agrees(schema, {R"(["a",1])", R"(["a"])", R"([1])", R"(["a","b"])", "[]"});
  // maxContains below what the array can hold would need "not contains": reported by name.
  try {
    compile_schema(Json::parse(R"({"type":"array","contains":{"type":"integer"},"maxContains":1})"));
    ADD_FAILURE() << "maxContains compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'maxContains'"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- uniqueItems

TEST(UniqueItems, FiniteItemValuesNeverRepeat) {
  Json schema = Json::parse(R"({"type":"array","items":{"enum":["x","y",1,true,null,1.0]},"uniqueItems":true})");
  expect_agrees(schema, {R"(["x","y"])", R"(["y","x",1,true,null])", R"(["x","x"])", R"([1,"x",1])", "[]",
                         R"([true,true])"});
  EXPECT_GT(generate_and_validate(schema, 80, 4), 20);
  Json bools = Json::parse(R"({"type":"array","items":{"type":"boolean"},"uniqueItems":true,"minItems":2})");
  expect_agrees(bools, {"[true,false]", "[false,true]", "[true,true]", "[true]", "[true,false,true]"});
}

std::string unique_error(const char* schema) {
  try {
    compile_schema(Json::parse(schema));
  } catch (const Error& e) {
    return e.what();
  }
  return "compiled";
}

// Items are strings: the Matcher refuses any token that would close an item equal to an earlier
// one of the same array (also inside tokens spanning the quote and the next `,` / `]`).
TEST(UniqueItems, StringItemsNeverRepeat) {
  Json schema = Json::parse(R"({"type":"object","properties":{
    "t":{"type":"array","items":{"type":"string"},"uniqueItems":true},
    "u":{"type":"array","items":{"type":"string"}},
    "n":{"type":"array","items":{"type":"array","items":{"type":"string"},"uniqueItems":true}}}})");
  expect_agrees(schema, {R"({"t":["a","b"]})", R"({"t":["a","a"]})", R"({"t":["ab","abc","ab"]})",
                         R"({"t":["x\n","x\n"]})", R"({"t":["x\n","x"]})", R"({"t":[],"u":["a","a"]})",
                         R"({"t":["a"],"u":["a","a"],"n":[["a","b"],["a","b"]]})", R"({"n":[["a","b","a"]]})",
                         R"({"t":["hello world","hello world"]})", R"({"t":["\"","\"",""]})", R"({"t":["",""]})"});
  EXPECT_GT(generate_and_validate(schema, 60, 8), 15);
  // Tokens that hold a whole repeated item, or close one and open the next.
  auto base = synthetic_vocab();
  std::vector<std::string> t;
  for (uint32_t id = 0; id + 2 < base->size(); ++id) t.push_back(base->bytes(id));
  for (const char* x : {"[\"ab\",\"ab\"]", "\"ab\",\"ab\"", "ab\",\"ab\"]", "\",\"ab"}) t.push_back(x);
  t.push_back("");
  auto vocab = std::make_shared<Vocabulary>(t, std::vector<uint32_t>{uint32_t(t.size() - 1)});
  Json arr = Json::parse(R"({"type":"array","items":{"type":"string"},"uniqueItems":true})");
  auto idx = index_for(arr, vocab);
  EXPECT_TRUE(idx->distinct_items());
  EXPECT_FALSE(accepts_text(idx, R"(["ab","ab"])"));
  EXPECT_FALSE(accepts_text(idx, R"(["x","ab","ab"])"));
  EXPECT_TRUE(accepts_text(idx, R"(["ab","abc"])"));
  EXPECT_TRUE(accepts_text(idx, R"(["abc","ab"])"));
  // Rollback re-reads the items.
  auto id_of = [&](const std::string& b) {
    for (uint32_t id = 0; id < vocab->size(); ++id)
      if (vocab->bytes(id) == b) return id;
    return UINT32_MAX;
  };
  Matcher m(idx);
  for (uint32_t tok : testing::greedy_tokenize(*vocab, R"(["ab","c")")) ASSERT_TRUE(m.accept(tok));
  m.rollback(3);  // back to `["ab",`: "c" is no longer an item
  for (uint32_t tok : testing::greedy_tokenize(*vocab, R"("c",)")) ASSERT_TRUE(m.accept(tok));
  EXPECT_FALSE(m.accept(id_of(R"("ab","ab")")));
  for (uint32_t tok : testing::greedy_tokenize(*vocab, R"("c)")) ASSERT_TRUE(m.accept(tok));
  std::vector<uint32_t> mask(vocab->mask_words());
  m.fill_mask(mask.data());
  EXPECT_FALSE(mask_has(mask, uint32_t('"')));  // would close "c" again
  EXPECT_TRUE(mask_has(mask, uint32_t('d')));
}

// Items that are strings, true, false or null: the literals are tracked like string items
// (also without quotes, inside longer tokens, and from their first letter).
TEST(UniqueItems, StringAndLiteralItemsNeverRepeat) {
  Json schema = Json::parse(R"({"type":"array","items":{"type":["string","boolean","null"]},"uniqueItems":true})");
  expect_agrees(schema, {R"([true,false,null,"true"])", "[true,true]", R"([null,"a",null])", R"(["null",null])",
                         R"([false,"x",false])", "[[true]]", R"(["",false,true])", "[null]"});
  EXPECT_GT(generate_and_validate(schema, 60, 12), 15);
  auto base = synthetic_vocab();
  std::vector<std::string> t;
  for (uint32_t id = 0; id + 2 < base->size(); ++id) t.push_back(base->bytes(id));
  for (const char* x : {"true,true", ",true]", "nu", "[true,true]", "l,\"", "[null"}) t.push_back(x);
  t.push_back("");
  auto vocab = std::make_shared<Vocabulary>(t, std::vector<uint32_t>{uint32_t(t.size() - 1)});
  auto idx = index_for(schema, vocab);
  EXPECT_TRUE(idx->distinct_literals());
  EXPECT_FALSE(accepts_text(idx, "[true,true]"));
  EXPECT_FALSE(accepts_text(idx, R"(["a",true,true])"));
  EXPECT_FALSE(accepts_text(idx, "[null,null]"));
  EXPECT_TRUE(accepts_text(idx, R"([null,"a",true])"));
  Matcher m(idx);
  for (uint32_t tok : testing::greedy_tokenize(*vocab, "[true,")) ASSERT_TRUE(m.accept(tok));
  std::vector<uint32_t> mask(vocab->mask_words());
  m.fill_mask(mask.data());
  EXPECT_FALSE(mask_has(mask, uint32_t('t')));  // can only become true again
  EXPECT_TRUE(mask_has(mask, uint32_t('f')));
  EXPECT_TRUE(mask_has(mask, testing::greedy_tokenize(*vocab, "nu")[0]));
}

// A prefix whose only completions are used items is refused where it would start (no dead end).
TEST(UniqueItems, StringItemsNoDeadEnd) {
  Json schema = Json::parse(R"({"type":"array","items":{"type":"string","pattern":"^(a|b+)$"},"uniqueItems":true,
                                "minItems":2})");
  expect_agrees(schema, {R"(["a","b"])", R"(["a","a"])", R"(["bb","a","b"])", R"(["b","b"])", R"(["a"])"});
  EXPECT_GT(generate_and_validate(schema, 60, 9), 15);
  Json few = Json::parse(R"({"type":"array","items":{"pattern":"^[abc]$","type":"string"},"uniqueItems":true,
                             "maxItems":3,"minItems":3,"prefixItems":[{"const":"b"}]})");
  // One finite language of n strings: at most n items (an implied maxItems), so no dead end.
  expect_agrees(Json::parse(R"({"type":"array","items":{"type":"string","maxLength":0},"uniqueItems":true})"),
                {R"([""])", R"(["",""])", "[]"});
  Json two = Json::parse(R"({"type":"array","items":{"type":"string","pattern":"^[ab]$"},"uniqueItems":true})");
  expect_agrees(two, {R"(["a","b"])", R"(["b","a","b"])", R"(["a","a"])", R"(["b"])"});
  EXPECT_GT(generate_and_validate(two, 30, 11), 10);
  expect_agrees(few, {R"(["b","a","c"])", R"(["b","c","a"])", R"(["b","b","a"])", R"(["a","b","c"])",
                      R"(["b","a","a"])"});
  EXPECT_GT(generate_and_validate(few, 30, 10), 5);
}

// What stays refused names uniqueItems: too few distinct strings for the array, items that may
// be objects or numbers, and alternatives mixing such an array with one that is not unique.
TEST(UniqueItems, StringItemsRefusals) {
  EXPECT_NE(unique_error(R"({"type":"array","prefixItems":[{"type":"string"}],"uniqueItems":true,"maxItems":4,
                            "items":{"type":"string","pattern":"^[ab]$"}})").find("'uniqueItems' at /uniqueItems"),
            std::string::npos);
  EXPECT_NE(unique_error(R"({"type":"array","items":{"type":["string","integer"]},"uniqueItems":true})")
                .find("'uniqueItems' at /uniqueItems"),
            std::string::npos);
  std::string mixed = unique_error(R"({"anyOf":[{"type":"array","items":{"type":"string"},"uniqueItems":true},
                                                 {"type":"array","maxItems":4}]})");
  EXPECT_NE(mixed.find("'uniqueItems'"), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("'uniqueItems' at /anyOf/0/uniqueItems ("), std::string::npos) << mixed;
  // uniqueItems on a string is no array: alternatives with it are not checked.
  EXPECT_EQ(unique_error(R"({"anyOf":[{"type":"string","uniqueItems":true},{"type":"string","maxLength":3}]})"),
            "compiled");
  EXPECT_NE(unique_error(R"({"anyOf":[{"type":"object","properties":{"t":{"type":"array","items":{"type":"string"},
                             "uniqueItems":true}}},{"type":"object"}]})").find("'uniqueItems'"),
            std::string::npos);
  EXPECT_EQ(unique_error(R"({"anyOf":[{"type":"array","items":{"type":"string"},"uniqueItems":true},{"type":"null"}]})"),
            "compiled");
}

// ---------------------------------------------------------------- if / then / else

const Json kShapes = Json::parse(R"({
  "type": "object",
  "properties": {"kind": {"type": "string"}, "r": {"type": "integer"}, "w": {"type": "integer"}},
  "required": ["kind"],
  "allOf": [
    {"if": {"properties": {"kind": {"const": "circle"}}}, "then": {"required": ["r"]}},
    {"if": {"properties": {"kind": {"const": "rect"}}}, "then": {"required": ["w"]}, "else": {"not": {"required": ["w"]}}}
  ]
})");

TEST(IfThenElse, DiscriminatorOnConstValues) {
  expect_agrees(kShapes, {R"({"kind":"circle","r":1})", R"({"kind":"circle"})", R"({"kind":"rect","w":2})",
                          R"({"kind":"rect"})", R"({"kind":"rect","r":1,"w":2})", R"({"kind":"other"})",
                          R"({"kind":"other","w":2})", R"({"kind":"circle","r":1,"w":2})", R"({"r":1})"});
  EXPECT_GT(generate_and_validate(kShapes, 80, 5), 20);
}

TEST(IfThenElse, RequiredTypeObjectAndNonObjects) {
  // No type: non-objects satisfy an `if` of properties/required, but not one with type object.
  Json schema = Json::parse(R"({
    "if": {"type": "object", "required": ["a"], "properties": {"a": {"enum": ["x", "y"]}}},
    "then": {"properties": {"b": {"type": "string"}}, "required": ["b"]},
    "else": {"type": ["object", "null"], "maxProperties": 1}
  })");
  expect_agrees(schema, {R"({"a":"x","b":"x"})", R"({"a":"x"})", R"({"a":3})", R"({"a":3,"c":1})", R"({})",
                         "null", "true", R"({"a":"y","b":"y"})", R"({"b":"x"})", R"({"a":"z"})"});
  EXPECT_GT(generate_and_validate(schema, 80, 6), 20);
}

TEST(IfThenElse, SchemaConditionAndDependentSchemas) {
  Json schema = Json::parse(R"({
    "type": "object",
    "if": {"properties": {"name": {"type": "string"}}},
    "then": {"properties": {"id": {"type": "integer"}}},
    "else": {"properties": {"id": {"type": "string"}}},
    "dependentSchemas": {"id": {"required": ["name"]}}
  })");
  expect_agrees(schema, {R"({"name":"a","id":1})", R"({"name":"a","id":"1"})", R"({"name":1,"id":"1"})",
                         R"({"name":1,"id":1})", R"({"id":1})", R"({})", R"({"name":null})"});
  EXPECT_GT(generate_and_validate(schema, 80, 7), 20);
  Json deps = Json::parse(
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"dependencies":{"a":{"properties":{"b":{"minimum":5}},"required":["b"]}}})");
  expect_agrees(deps, {R"({"a":1,"b":5})", R"({"a":1,"b":4})", R"({"a":1})", R"({"b":1})", R"({})"});
  // A value test and a schema test on the same property.
  Json mixed = Json::parse(R"({"type":"object","allOf":[
    {"if":{"properties":{"a":{"const":"x"}}},"then":{"required":["b"]}},
    {"if":{"properties":{"a":{"type":"string"}}},"then":{"required":["c"]},"else":{"maxProperties":1}}]})");
  expect_agrees(mixed, {R"({"a":"x","b":1,"c":2})", R"({"a":"x","c":2})", R"({"a":"y","c":2})", R"({"a":"y"})",
                        R"({"a":1})", R"({"a":1,"b":1})", R"({})", R"({"b":1})"});
  EXPECT_GT(generate_and_validate(mixed, 80, 8), 20);
}

TEST(IfThenElse, UnsupportedFormsAreReportedByName) {
  for (const char* s : {R"({"if":{"minimum":3},"then":{"maximum":5}})",
                        // outside the tested numbers: the grammar cannot exclude numbers
                        R"({"type":"object","if":{"properties":{"v":{"const":2}}},"then":{"required":["w"]}})",
                        R"({"if":{"properties":{"a":{"type":"string"}}},"then":{"required":["b"]},
                            "allOf":[{"if":{"properties":{"a":{"maxLength":3}}},"then":{"required":["c"]}}]})"}) {
    try {
      compile_schema(Json::parse(s));
      ADD_FAILURE() << "compiled: " << s;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'if'"), std::string::npos) << e.what();
    }
  }
  // `if` without then/else asserts nothing.
  expect_agrees(Json::parse(R"({"type":"integer","if":{"minimum":3}})"), {"1", "5"});
}

}  // namespace
}  // namespace ringlm::guided

namespace ringlm::guided {
namespace {

// Keywords newer than the schema's declared draft are unknown there: compiler and validator
// both ignore them (if/then/else before draft 7, contains before 6, minContains before 2019-09).
TEST(Drafts, NewerKeywordsAreIgnoredInOlderDrafts) {
  const char* cond = R"("type":"object","if":{"properties":{"k":{"const":"a"}}},"then":{"required":["x"]})";
  for (const char* uri : {"http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#"}) {
    Json schema = Json::parse(std::string("{\"$schema\":\"") + uri + "\"," + cond + "}");
    expect_agrees(schema, {R"({"k":"a"})", R"({"k":"a","x":1})"});
    EXPECT_TRUE(Validator(schema).validate(Json::parse(R"({"k":"a"})")));
  }
  Json d7 = Json::parse(std::string(R"({"$schema":"http://json-schema.org/draft-07/schema#",)") + cond + "}");
  EXPECT_FALSE(Validator(d7).validate(Json::parse(R"({"k":"a"})")));
  expect_agrees(d7, {R"({"k":"a"})", R"({"k":"a","x":1})"});
  Json c4 = Json::parse(R"({"$schema":"http://json-schema.org/draft-04/schema#","items":{"type":"integer"},"contains":{"const":5}})");
  EXPECT_TRUE(Validator(c4).validate(Json::parse("[1]")));
  expect_agrees(c4, {"[1]", "[5]", "[]"});
  Json c7 = Json::parse(R"({"$schema":"http://json-schema.org/draft-07/schema#","items":{"type":"integer"},
                            "contains":{"const":5},"minContains":2})");
  EXPECT_FALSE(Validator(c7).validate(Json::parse("[1]")));
  EXPECT_TRUE(Validator(c7).validate(Json::parse("[5]")));  // minContains is 2019-09
  expect_agrees(c7, {"[1]", "[5]", "[5,5]", "[]"});
}

}  // namespace
}  // namespace ringlm::guided
