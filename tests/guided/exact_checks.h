// Checks shared by the tests of exact keyword forms: a schema's compile error, and "the grammar
// accepts an instance iff the validator says it is valid".
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "guided/validator.h"
#include "test_vocab.h"
#include "util/error.h"

namespace ringlm::guided::testing {

// The error compile_schema raises for `schema`, or "" when it compiles.
inline std::string compile_error(const Json& schema, const CompileOptions& o = {}) {
  try {
    compile_schema(schema, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Each instance (compact JSON text, keys in schema order) is accepted iff the validator says it
// is valid; `valid_expected` pins how many are, so a test asserts both kinds occur.
inline void expect_exact(const char* schema_text, const std::vector<const char*>& instances, int valid_expected) {
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

}  // namespace ringlm::guided::testing
