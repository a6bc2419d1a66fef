// JSON Schema validator (drafts 4, 7 and 2020-12 keywords) used to check generated output and
// to build test data. Keywords: type, enum, const, properties, required, additionalProperties,
// patternProperties, items / prefixItems / additionalItems, minItems, maxItems, uniqueItems,
// contains (+ minContains / maxContains), minLength / maxLength (code points), pattern
// (regex.h subset), format (formats.h list, when assert_formats), minimum / maximum /
// exclusiveMinimum / exclusiveMaximum (draft-4 boolean and draft-6+ number forms), multipleOf,
// allOf / anyOf / oneOf / not, if / then / else, $ref (JSON pointers into the document, `$id`
// and `$anchor` names), $defs / definitions, dependentRequired / dependentSchemas /
// dependencies, minProperties / maxProperties, propertyNames.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "guided/json.h"
#include "guided/regex.h"

namespace ringlm::guided {

struct ValidatorOptions {
  bool assert_formats = true;
  // 4, 6, 7, 2019 or 2020 (for 2019-09 / 2020-12); 0 = from the root's "$schema", else 2020-12
  // rules. Keywords newer than the draft are ignored as unknown: contains before 6, if/then/else
  // before 7, minContains / maxContains / dependentRequired / dependentSchemas before 2019-09.
  int draft = 0;
};

// The draft a schema document declares with "$schema" (4, 6, 7, 2019, 2020); 2020 when absent
// or unrecognised.
int schema_draft(const Json& root);

// Internal keywords the compiler writes into schemas it builds by negation (schema_negate.cpp),
// honoured in every draft by the validator and the emitter alike:
//   "$ringlm:someItem": S   -- an array with at least one item valid under S ("contains"
//                              without draft 6, for NOT items in draft 4);
//   "$ringlm:someKey": {"except": [names], "exceptPatterns": [patterns],
//                       "withinPatterns": [patterns], "value": S}
//                           -- an object with at least one key not among the names, matching
//                              none of the except patterns and all of the within patterns,
//                              whose value is valid under S (or an
//                              array of such objects: each needs its key).
inline constexpr const char* kSomeItemKeyword = "$ringlm:someItem";
inline constexpr const char* kSomeKeyKeyword = "$ringlm:someKey";

class Validator {
 public:
  explicit Validator(Json schema, ValidatorOptions options = {});
  ~Validator();

  // True when `instance` is valid; otherwise false and, if `why` is given, a one-line reason
  // naming the instance location and the failing keyword.
  bool validate(const Json& instance, std::string* why = nullptr) const;
  // Validates against `schema` (a subschema or a schema derived from this document; its $refs
  // resolve against this validator's document).
  bool validate_subschema(const Json& schema, const Json& instance) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// JSON equality as JSON Schema defines it (numbers by value, objects ignoring key order).
bool json_equal(const Json& a, const Json& b);

}  // namespace ringlm::guided
