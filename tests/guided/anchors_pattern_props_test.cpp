// Exact forms of keywords that used to be refused (issue #16, JSONSchemaBench), one group of
// tests per form. Regex semantics are checked against the answers ECMAScript gives; schemas
// against the validator both ways (accepted iff valid, and the mask agrees with accept at
// every token), and what stays refused still names its keyword and pointer.
#include <gtest/gtest.h>

#include "guided/regex.h"
#include "guided/validator.h"
#include "util/error.h"
#include "random_walks.h"
#include "test_vocab.h"

namespace ringlm::guided {
namespace {

using testing::accepts_text;
using testing::index_for;
using testing::synthetic_vocab;

bool search(const char* pattern, const char* text) {
  return compile_regex(pattern, /*search_semantics=*/true).matches(utf8_to_u32(text));
}

std::string compile_error(const Json& schema) {
  try {
    compile_schema(schema);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Each instance (compact JSON, keys in schema order) is accepted iff the validator says it is
// valid; `valid_expected` pins how many are, so both kinds occur.
void expect_exact(const char* schema_text, const std::vector<const char*>& instances, int valid_expected) {
  Json schema = Json::parse(schema_text);
  ASSERT_EQ(compile_error(schema), "") << schema_text;
  auto idx = index_for(schema, synthetic_vocab());
  Validator v(schema);
  int valid = 0;
  for (const char* text : instances) {
    bool ok = v.validate(Json::parse(text));
    valid += ok;
    EXPECT_EQ(accepts_text(idx, text), ok) << schema_text << "\n  instance " << text << " valid=" << ok;
  }
  EXPECT_EQ(valid, valid_expected) << schema_text;
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

}  // namespace
}  // namespace ringlm::guided
