// Schema compiler + token matcher on hand-written schemas with a synthetic vocabulary.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "guided/validator.h"
#include "util/error.h"
#include "test_vocab.h"

namespace ringlm::guided {
namespace {

using testing::accepts_text;
using testing::index_for;
using testing::mask_has;
using testing::synthetic_vocab;

const Json kPerson = Json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "format": "email"},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 3},
    "born": {"type": "string", "format": "date"},
    "id": {"type": "string", "format": "uuid"},
    "score": {"type": "number", "minimum": -1, "exclusiveMaximum": 10}
  },
  "required": ["name", "age"],
  "additionalProperties": false
})");

const Json kTree = Json::parse(R"({
  "$defs": {"node": {"type": "object", "properties": {
    "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
    "required": ["v"], "additionalProperties": false}},
  "$ref": "#/$defs/node"
})");

const Json kUnion = Json::parse(R"({
  "anyOf": [
    {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "minimum": 0}},
     "required": ["kind", "r"], "additionalProperties": false},
    {"type": "object", "properties": {"kind": {"const": "rect"}, "w": {"type": "integer"}, "h": {"type": "integer"}},
     "required": ["kind", "w", "h"], "additionalProperties": false},
    {"type": "null"}
  ]
})");

TEST(Compiler, EnumAcceptsExactlyItsValues) {
  auto idx = index_for(Json::parse(R"({"enum": ["red", "green", 3, null, {"a": [1, true]}]})"), synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, "\"red\""));
  EXPECT_TRUE(accepts_text(idx, "\"green\""));
  EXPECT_TRUE(accepts_text(idx, "3"));
  EXPECT_TRUE(accepts_text(idx, "null"));
  EXPECT_TRUE(accepts_text(idx, "{\"a\":[1,true]}"));
  EXPECT_FALSE(accepts_text(idx, "\"blue\""));
  EXPECT_FALSE(accepts_text(idx, "\"re\""));
  EXPECT_FALSE(accepts_text(idx, "4"));
  EXPECT_FALSE(accepts_text(idx, "30"));
}

TEST(Compiler, NestedObjectRequiredOptionalAndOrder) {
  auto idx = index_for(kPerson, synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, R"({"name":"Al","age":3})"));
  EXPECT_TRUE(accepts_text(idx, R"({"name":"Al","age":3,"tags":["a","c"]})"));
  EXPECT_TRUE(accepts_text(idx, R"({"name":"Al","age":150,"email":"a.b@c.de","tags":["b"],"born":"2024-02-29"})"));
  EXPECT_TRUE(accepts_text(idx, R"({"name":"Al","age":0,"id":"123e4567-e89b-12d3-a456-426614174000","score":9.5})"));
  EXPECT_FALSE(accepts_text(idx, R"({"age":3,"name":"Al"})"));           // schema order
  EXPECT_FALSE(accepts_text(idx, R"({"name":"Al"})"));                    // missing required
  EXPECT_FALSE(accepts_text(idx, R"({"name":"","age":3})"));              // minLength
  EXPECT_FALSE(accepts_text(idx, R"({"name":"abcdefghijklm","age":3})")); // maxLength
  EXPECT_FALSE(accepts_text(idx, R"({"name":"Al","age":151})"));          // maximum
  EXPECT_FALSE(accepts_text(idx, R"({"name":"Al","age":-1})"));           // minimum
  EXPECT_FALSE(accepts_text(idx, R"({"name":"Al","age":3,"tags":[]})"));  // minItems
  EXPECT_FALSE(accepts_text(idx, R"({"name":"Al","age":3,"tags":["a","a","a","a"]})"));
  EXPECT_FALSE(accepts_text(idx, R"({"name":"Al","age":3,"born":"2024-13-01"})"));
  EXPECT_FALSE(accepts_text(idx, R"({"name":"Al","age":3,"score":10})"));  // exclusiveMaximum
  EXPECT_FALSE(accepts_text(idx, R"({"name":"Al","age":3,"x":1})"));       // additionalProperties
}

TEST(Compiler, PythonWhitespaceStyle) {
  auto idx = index_for(kPerson, synthetic_vocab(), Whitespace::kPython);
  EXPECT_TRUE(accepts_text(idx, R"({"name": "Al", "age": 3, "tags": ["a", "b"]})"));
  EXPECT_FALSE(accepts_text(idx, R"({"name":"Al","age":3})"));
}

TEST(Compiler, RecursionThroughRef) {
  auto idx = index_for(kTree, synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, R"({"v":1})"));
  EXPECT_TRUE(accepts_text(idx, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  EXPECT_FALSE(accepts_text(idx, R"({"v":1,"kids":[{"v":2},{"v":3},{"v":4}]})"));
  EXPECT_FALSE(accepts_text(idx, R"({"v":1,"kids":[{"w":2}]})"));
}

TEST(Compiler, AnyOfUnion) {
  auto idx = index_for(kUnion, synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, R"({"kind":"circle","r":2.5})"));
  EXPECT_TRUE(accepts_text(idx, R"({"kind":"rect","w":2,"h":3})"));
  EXPECT_TRUE(accepts_text(idx, "null"));
  EXPECT_FALSE(accepts_text(idx, R"({"kind":"rect","r":2})"));
  EXPECT_FALSE(accepts_text(idx, R"({"kind":"circle","r":-1})"));
}

TEST(Compiler, AdditionalPropertiesDefaultAndSchema) {
  auto idx = index_for(Json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}},
      "additionalProperties":{"type":"boolean"}})"), synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, R"({"a":1,"b":true,"c":false})"));
  EXPECT_TRUE(accepts_text(idx, R"({"b":true})"));
  EXPECT_FALSE(accepts_text(idx, R"({"b":1})"));
  EXPECT_FALSE(accepts_text(idx, R"({"a":1,"a":true})"));  // a declared name cannot be "additional"
  auto open = index_for(Json::parse(R"({"type":"object"})"), synthetic_vocab());
  EXPECT_TRUE(accepts_text(open, R"({"x":[1,{"y":null}],"z":"q"})"));
}

TEST(Compiler, PatternAndEscapes) {
  auto idx = index_for(Json::parse(R"({"type":"string","pattern":"^[a-z]+\"?$"})"), synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, R"("abc")"));
  EXPECT_TRUE(accepts_text(idx, R"("abc\"")"));
  EXPECT_FALSE(accepts_text(idx, R"("abC")"));
  auto s = index_for(Json::parse(R"({"type":"string","maxLength":2})"), synthetic_vocab());
  EXPECT_TRUE(accepts_text(s, "\"\xC3\xA9\\n\""));  // two code points, one escaped
  EXPECT_FALSE(accepts_text(s, "\"\xC3\xA9\\na\""));
  EXPECT_FALSE(accepts_text(s, "\"\xC3\""));         // invalid UTF-8
}

TEST(Compiler, MalformedSchemasGiveClearErrors) {
  auto err = [](const char* text) {
    try {
      compile_schema(Json::parse(text));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err(R"({"type": 5})").find("'type'"), std::string::npos);
  EXPECT_NE(err(R"({"type": "strin"})").find("unknown type"), std::string::npos);
  EXPECT_NE(err(R"({"if": {"type": "string"}, "then": {"minLength": 2}})").find("'if'"), std::string::npos);
  EXPECT_NE(err(R"({"$ref": "#/definitions/nope"})").find("unresolvable $ref"), std::string::npos);
  EXPECT_NE(err(R"({"type": "string", "pattern": "(?=a)b"})").find("'pattern'"), std::string::npos);
  EXPECT_NE(err(R"({"type": "array", "uniqueItems": true})").find("'uniqueItems'"), std::string::npos);
  EXPECT_NE(err(R"({"type": "number", "multipleOf": 1234.567})").find("'multipleOf'"), std::string::npos);
  EXPECT_NE(err(R"({"type": "array", "contains": {"type": "integer"}, "maxContains": 1})").find("'maxContains'"),
            std::string::npos);
  // JSON pointers that once escaped as std::out_of_range / std::invalid_argument (fuzz finding):
  // an index past size_t and a '%' without two hex digits are unresolvable refs, not crashes.
  EXPECT_NE(err(R"({"enum": [1], "$ref": "#/enum/99999999999999999999999"})").find("unresolvable $ref"),
            std::string::npos);
  EXPECT_NE(err(R"({"$ref": "#/a%zz"})").find("unresolvable $ref"), std::string::npos);
  // A bound whose fixed-point spelling overflowed a 64-byte buffer read garbage ("too large").
  EXPECT_NE(err(R"({"type": "number", "minimum": 1e-300})").find("bound 1e-300 has 300 decimal places"),
            std::string::npos);
  EXPECT_NE(err(R"({"$ref": "#/a%4"})").find("unresolvable $ref"), std::string::npos);
}

TEST(Compiler, RefPointersDecodePercentEscapesAndIndices) {
  // "%25" is '%', "%41" is 'A'; a lone '%' names a key with '%' in it.
  const Json s = Json::parse(R"({"$defs": {"a%b": {"const": 1}, "A": {"const": 2}, "l": [{"const": 3}, {"const": 4}]},
                                 "anyOf": [{"$ref": "#/$defs/a%25b"}, {"$ref": "#/$defs/%41"},
                                           {"$ref": "#/$defs/l/1"}, {"$ref": "#/$defs/a%b"}]})");
  auto idx = index_for(s, synthetic_vocab());
  EXPECT_TRUE(accepts_text(idx, "1"));
  EXPECT_TRUE(accepts_text(idx, "2"));
  EXPECT_TRUE(accepts_text(idx, "4"));
  EXPECT_FALSE(accepts_text(idx, "3"));
}

TEST(Matcher, RollbackRestoresState) {
  auto idx = index_for(kPerson, synthetic_vocab());
  Matcher m(idx);
  auto toks = testing::greedy_tokenize(idx->vocab(), R"({"name":"Al","age":3})");
  for (size_t i = 0; i < 5; ++i) ASSERT_TRUE(m.accept(toks[i]));
  std::vector<uint32_t> before(idx->vocab().mask_words()), after(before.size());
  m.fill_mask(before.data());
  for (size_t i = 5; i < toks.size(); ++i) ASSERT_TRUE(m.accept(toks[i]));
  EXPECT_TRUE(m.is_accepting());
  m.rollback(toks.size() - 5);
  m.fill_mask(after.data());
  EXPECT_EQ(before, after);
  EXPECT_EQ(m.num_accepted(), 5u);
  EXPECT_THROW(m.rollback(6), Error);
}

TEST(Matcher, StopTokenOnlyWhenComplete) {
  auto idx = index_for(kPerson, synthetic_vocab());
  const Vocabulary& v = idx->vocab();
  uint32_t eos = v.stop_ids()[0];
  Matcher m(idx);
  std::vector<uint32_t> mask(v.mask_words());
  for (uint32_t t : testing::greedy_tokenize(v, R"({"name":"Al","age":3)")) {
    m.fill_mask(mask.data());
    EXPECT_FALSE(mask_has(mask, eos));
    ASSERT_TRUE(m.accept(t));
  }
  EXPECT_FALSE(m.accept(eos));
  ASSERT_TRUE(m.accept(uint32_t('}')));
  m.fill_mask(mask.data());
  EXPECT_TRUE(mask_has(mask, eos));
  size_t allowed = 0;
  for (uint32_t id = 0; id < v.size(); ++id) allowed += mask_has(mask, id);
  EXPECT_EQ(allowed, 1u);  // only the stop token after the closing brace
  EXPECT_TRUE(m.accept(eos));
  EXPECT_TRUE(m.is_stopped());
  EXPECT_FALSE(m.accept(uint32_t(' ')));
  // The empty special token is never allowed.
  Matcher fresh(idx);
  fresh.fill_mask(mask.data());
  EXPECT_FALSE(mask_has(mask, eos - 1));
}

TEST(Matcher, ForcedTokensSpellFixedKeys) {
  auto idx = index_for(Json::parse(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},
      "required":["name","age"],"additionalProperties":false})"), synthetic_vocab());
  Matcher m(idx);
  std::string forced;
  for (uint32_t t : m.forced_tokens()) forced += idx->vocab().bytes(t);
  EXPECT_EQ(forced, "{\"name\":\"");
  for (uint32_t t : m.forced_tokens()) ASSERT_TRUE(m.accept(t));
  EXPECT_TRUE(m.forced_tokens().empty());  // string content is free
  for (uint32_t t : testing::greedy_tokenize(idx->vocab(), "ab\"")) ASSERT_TRUE(m.accept(t));
  forced.clear();
  for (uint32_t t : m.forced_tokens()) forced += idx->vocab().bytes(t);
  EXPECT_EQ(forced, ",\"age\":");
}

// Every token's mask bit agrees with accept() (checked by accepting and rolling back), at
// every position of a valid instance.
TEST(Matcher, MaskAgreesWithAcceptEverywhere) {
  auto idx = index_for(kPerson, synthetic_vocab());
  const Vocabulary& v = idx->vocab();
  Matcher m(idx);
  std::vector<uint32_t> mask(v.mask_words());
  auto toks = testing::greedy_tokenize(v, R"({"name":"Al é","age":42,"tags":["a","b"],"score":-0.5})");
  for (uint32_t t : toks) {
    m.fill_mask(mask.data());
    for (uint32_t id = 0; id < v.size(); ++id) {
      bool ok = m.accept(id);
      ASSERT_EQ(ok, mask_has(mask, id)) << "token " << id << " after " << m.num_accepted();
      if (ok) m.rollback(1);
    }
    ASSERT_TRUE(m.accept(t));
  }
  EXPECT_TRUE(m.is_accepting());
}

// Random walks through the mask always produce text that parses and validates.
TEST(Matcher, RandomGenerationsValidate) {
  auto vocab = synthetic_vocab();
  std::mt19937 rng(1234);
  for (const Json* schema : {&kPerson, &kTree, &kUnion}) {
    auto idx = index_for(*schema, vocab);
    Validator validator(*schema);
    int completed = 0;
    for (int run = 0; run < 60; ++run) {
      Matcher m(idx);
      std::vector<uint32_t> mask(vocab->mask_words());
      std::string text;
      for (int step = 0; step < 400 && !m.is_stopped(); ++step) {
        m.fill_mask(mask.data());
        std::vector<uint32_t> allowed;
        for (uint32_t id = 0; id < vocab->size(); ++id)
          if (mask_has(mask, id)) allowed.push_back(id);
        ASSERT_FALSE(allowed.empty()) << "dead end after " << text;
        uint32_t pick;
        if (mask_has(mask, vocab->stop_ids()[0]) && rng() % 2 == 0) {
          pick = vocab->stop_ids()[0];
        } else if (rng() % 3 == 0) {
          // Prefer structural progress: the longest allowed token.
          pick = *std::max_element(allowed.begin(), allowed.end(), [&](uint32_t a, uint32_t b) {
            return vocab->bytes(a).size() < vocab->bytes(b).size();
          });
        } else {
          pick = allowed[rng() % allowed.size()];
        }
        ASSERT_TRUE(m.accept(pick));
        text += vocab->bytes(pick);
      }
      if (!m.is_stopped()) continue;
      ++completed;
      Json parsed;
      ASSERT_NO_THROW(parsed = Json::parse(text)) << text;
      std::string why;
      EXPECT_TRUE(validator.validate(parsed, &why)) << text << ": " << why;
    }
    EXPECT_GT(completed, 10);
  }
}

// Mutations of valid instances: the matcher accepts a mutated text exactly when it parses,
// validates, and is written the grammar's canonical way.
TEST(Matcher, MutationsAgreeWithValidator) {
  auto vocab = synthetic_vocab();
  std::mt19937 rng(99);
  const char* instances[] = {R"({"name":"Al","age":3,"tags":["a","c"]})",
                             R"({"name":"Bo","age":150,"born":"2024-02-28","score":9})"};
  auto idx = index_for(kPerson, vocab);
  Validator validator(kPerson);
  const std::string alphabet = "{}[]\":,0123456789abc-.eE \\";
  int rejected = 0, accepted = 0;
  for (const char* inst : instances) {
    for (int k = 0; k < 300; ++k) {
      std::string t = inst;
      size_t pos = rng() % t.size();
      switch (rng() % 3) {
        case 0: t[pos] = alphabet[rng() % alphabet.size()]; break;
        case 1: t.erase(pos, 1); break;
        default: t.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
      }
      bool expect = false;
      try {
        Json j = Json::parse(t);
        expect = validator.validate(j) && serialize_json(j, Whitespace::kCompact) == t;
      } catch (const std::exception&) {
        expect = false;
      }
      bool got = accepts_text(idx, t);
      EXPECT_EQ(got, expect) << t;
      (got ? accepted : rejected)++;
    }
  }
  EXPECT_GT(rejected, 100);
}

}  // namespace
}  // namespace ringlm::guided

namespace ringlm::guided {
namespace {

TEST(Compiler, NotForms) {
  auto v = testing::synthetic_vocab();
  auto idx = index_for(Json::parse(R"({"type":["string","null","boolean"],"not":{"enum":["ab",null,true]}})"), v);
  EXPECT_TRUE(accepts_text(idx, R"("abc")"));
  EXPECT_TRUE(accepts_text(idx, R"("a")"));
  EXPECT_TRUE(accepts_text(idx, "false"));
  EXPECT_FALSE(accepts_text(idx, R"("ab")"));
  EXPECT_FALSE(accepts_text(idx, "null"));
  EXPECT_FALSE(accepts_text(idx, "true"));
  auto pat = index_for(Json::parse(R"({"type":"string","not":{"pattern":"^a"}})"), v);
  EXPECT_TRUE(accepts_text(pat, R"("ba")"));
  EXPECT_FALSE(accepts_text(pat, R"("ab")"));
  auto req = index_for(Json::parse(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
      "not":{"anyOf":[{"required":["a"]}]}})"), v);
  EXPECT_TRUE(accepts_text(req, R"({"b":1})"));
  EXPECT_FALSE(accepts_text(req, R"({"a":1})"));
  EXPECT_FALSE(accepts_text(req, R"({"b":1,"a":1})"));
  auto any = index_for(Json::parse(R"({"not":{"const":"x"}})"), v);
  EXPECT_TRUE(accepts_text(any, R"(["x"])"));
  EXPECT_FALSE(accepts_text(any, R"("x")"));
  auto both = index_for(Json::parse(R"({"allOf":[{"not":{"type":"null"}},{"not":{"type":"string"}}],"type":["null","string","boolean"]})"), v);
  EXPECT_TRUE(accepts_text(both, "true"));
  EXPECT_FALSE(accepts_text(both, "null"));
  EXPECT_FALSE(accepts_text(both, R"("s")"));
}

}  // namespace
}  // namespace ringlm::guided

namespace ringlm::guided {
namespace {

TEST(Compiler, DependentRequired) {
  auto v = testing::synthetic_vocab();
  auto idx = index_for(Json::parse(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
      "c":{"type":"integer"}},"dependentRequired":{"a":["c"],"c":["b"]}})"), v);
  EXPECT_TRUE(accepts_text(idx, R"({})"));
  EXPECT_TRUE(accepts_text(idx, R"({"b":1})"));
  EXPECT_TRUE(accepts_text(idx, R"({"b":1,"c":2})"));
  EXPECT_TRUE(accepts_text(idx, R"({"a":1,"b":1,"c":2})"));
  EXPECT_FALSE(accepts_text(idx, R"({"a":1,"b":1})"));   // a needs c
  EXPECT_FALSE(accepts_text(idx, R"({"c":2})"));         // c needs b
  EXPECT_FALSE(accepts_text(idx, R"({"a":1,"c":2})"));
  auto extra = index_for(Json::parse(R"({"type":"object","dependencies":{"x":["y"]}})"), v);
  EXPECT_TRUE(accepts_text(extra, R"({"x":1,"y":2})"));
  EXPECT_TRUE(accepts_text(extra, R"({"y":2,"z":3})"));
  EXPECT_FALSE(accepts_text(extra, R"({"x":1,"z":3})"));
}

}  // namespace
}  // namespace ringlm::guided

namespace ringlm::guided {
namespace {

// Numbers against decimal bounds: the grammar agrees with the validator on a grid of values.
TEST(Compiler, DecimalBoundsMatchValidator) {
  auto v = testing::synthetic_vocab();
  const char* schemas[] = {R"({"type":"number","minimum":0.1,"maximum":2.55})",
                           R"({"type":"number","exclusiveMinimum":-1.5,"exclusiveMaximum":0.25})",
                           R"({"type":"number","minimum":-0.05})", R"({"type":"number","exclusiveMaximum":-2.5})",
                           // a bound with many decimal places (its fixed-point spelling is 62 bytes)
                           R"({"type":"number","minimum":1.5e-60})", R"({"type":"number","exclusiveMaximum":-2.5e-59})"};
  const char* values[] = {"0", "0.1", "0.09", "0.10", "0.100001", "2.55", "2.550", "2.551", "2.5", "3", "-1.5",
                          "-1.49", "-1.51", "0.25", "0.2499", "-0.05", "-0.051", "-0.049", "-2.5", "-2.51",
                          "-3", "12", "1", "-0", "0.0", "0.0000001", "-0.0000001"};
  for (const char* sch : schemas) {
    Json schema = Json::parse(sch);
    auto idx = index_for(schema, v);
    Validator val(schema);
    for (const char* x : values) {
      EXPECT_EQ(accepts_text(idx, x), val.validate(Json::parse(x))) << sch << " value " << x;
    }
  }
}

}  // namespace
}  // namespace ringlm::guided


namespace ringlm::guided {
namespace {

// One GrammarIndex shared by several threads gives the same masks as a private one.
TEST(Matcher, SharedIndexIsThreadSafe) {
  auto v = testing::synthetic_vocab();
  auto shared = index_for(kPerson, v);
  const std::string text = R"({"name":"Al é","age":42,"tags":["a","b"],"score":-0.5})";
  auto toks = testing::greedy_tokenize(*v, text);
  auto run = [&](const std::shared_ptr<GrammarIndex>& idx) {
    std::vector<std::vector<uint32_t>> masks;
    Matcher m(idx);
    std::vector<uint32_t> mask(v->mask_words());
    for (uint32_t t : toks) {
      m.fill_mask(mask.data());
      masks.push_back(mask);
      if (!m.accept(t)) break;
    }
    return masks;
  };
  auto reference = run(index_for(kPerson, v));
  std::vector<std::vector<std::vector<uint32_t>>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { got[t] = run(shared); });
  for (auto& th : threads) th.join();
  for (auto& g : got) EXPECT_EQ(g, reference);
}

}  // namespace
}  // namespace ringlm::guided

namespace ringlm::guided {
namespace {

// Length-bounded patterns: no token may lead into a prefix that can no longer be completed,
// and mask and accept agree at every position.
TEST(Matcher, BoundedPatternHasNoDeadEnds) {
  auto v = testing::synthetic_vocab();
  for (const char* sch : {R"({"type":"string","minLength":10,"maxLength":10,"pattern":"[0-9]{10}"})",
                          R"({"type":"string","maxLength":6,"pattern":"ab"})",
                          R"({"type":"string","minLength":3,"pattern":"^[a-c]*$"})"}) {
    auto idx = index_for(Json::parse(sch), v);
    std::mt19937 rng(7);
    for (int run = 0; run < 30; ++run) {
      Matcher m(idx);
      std::vector<uint32_t> mask(v->mask_words());
      for (int step = 0; step < 40 && !m.is_stopped(); ++step) {
        m.fill_mask(mask.data());
        std::vector<uint32_t> allowed;
        for (uint32_t id = 0; id < v->size(); ++id) {
          bool ok = m.accept(id);
          ASSERT_EQ(ok, mask_has(mask, id)) << sch << " token " << id;
          if (ok) {
            allowed.push_back(id);
            m.rollback(1);
          }
        }
        ASSERT_FALSE(allowed.empty()) << sch << ": dead end after " << m.num_accepted() << " tokens";
        ASSERT_TRUE(m.accept(allowed[rng() % allowed.size()]));
      }
    }
  }
}

}  // namespace
}  // namespace ringlm::guided

namespace ringlm::guided {
namespace {

TEST(Compiler, NumberDigitsAreCapped) {
  auto v = testing::synthetic_vocab();
  auto idx = index_for(Json::parse(R"({"type":"number"})"), v);
  EXPECT_TRUE(accepts_text(idx, "12345678901234567890.12345678901234567890e+123"));
  EXPECT_FALSE(accepts_text(idx, "123456789012345678901"));
  EXPECT_FALSE(accepts_text(idx, "0.000000000000000000001"));
  auto bounded = index_for(Json::parse(R"({"type":"number","minimum":0,"maximum":1})"), v);
  EXPECT_TRUE(accepts_text(bounded, "0.25"));
  EXPECT_FALSE(accepts_text(bounded, "0.000000000000000000001"));
}

}  // namespace
}  // namespace ringlm::guided
