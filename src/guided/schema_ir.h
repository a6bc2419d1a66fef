// The schema compiler's intermediate form (internal to src/guided). A schema being compiled is
// its JSON keywords (only the JSON Schema vocabulary a user can write) plus typed lists of what
// merging allOf members adds beyond one value per keyword: further `not` schemas, patterns and
// formats, and the if/then/else clauses of the members. Keeping those out of the JSON means a
// user schema cannot reach them: a user's "x-conds" is an unknown keyword like any other.
//
// The passes over it (schema_passes.h): normalisation (schema_normalize.cpp: $ref, allOf /
// anyOf / oneOf, if/then/else cases in schema_conditionals.cpp, the allOf meet in
// schema_merge.cpp) and emission into the grammar builder (schema_emit*.cpp).
#pragma once

#include <string>
#include <vector>

#include "guided/json.h"

namespace ringlm::guided::schema {

// What a node asserts beyond its keywords (each list conjoined with the keyword it extends).
struct Extras {
  std::vector<Json> conditions;  // {"if", "then"?, "else"?} clauses of merged allOf members
  std::vector<Json> nots;        // further `not` schemas (the node's own is keywords["not"])
  std::vector<Json> patterns;    // further `pattern` values (the node's own: keywords["pattern"])
  std::vector<Json> formats;     // further `format` values, each differing from keywords["format"]

  bool empty() const { return conditions.empty() && nots.empty() && patterns.empty() && formats.empty(); }
  // Appends o's lists after this one's (the order of conjunction is kept).
  void append(const Extras& o);
  // A content key (memoising rules by content): equal keys, equal extras.
  std::string key() const;
};

// One schema of the intermediate form. `keywords` is an object or a boolean schema.
struct Node {
  Json keywords = Json::object();
  Extras extras;
  std::string key() const { return keywords.dump() + '\x01' + extras.key(); }
};

// The empty Extras of a schema taken from the document as it is.
const Extras& no_extras();

// allOf of `into` and `b` (a member already dereferenced: no top-level $ref), in place: the
// meet of each keyword both assert, the union of the rest; what one keyword cannot hold goes to
// the extras; b's if/then/else becomes a clause. Throws Error for pairs it cannot combine
// exactly (patternProperties with properties, differing tuple `items`, ...).
void merge_into(Node& into, const Json& b, const Extras& b_extras);

}  // namespace ringlm::guided::schema
