// JSON Schema keyword readers shared by the schema compiler's passes (internal to src/guided).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>

#include "guided/json.h"
#include "guided/schema_compiler.h"

namespace ringlm::guided::schema {

inline constexpr uint32_t kNone = UINT32_MAX;

// Keywords that never restrict a value (or are handled by the keyword that owns them).
const std::unordered_set<std::string>& annotation_keywords();
// Assertion keywords the compiler understands (for the "has assertions" test and merges).
bool is_known_assertion(const std::string& k);
bool has_assertions(const Json& s);
bool is_true_schema(const Json& s);
bool is_false_schema(const Json& s);

// The `type` keyword as a set (all seven types without it); throws on a malformed value.
std::set<std::string> type_set(const Json& s);
Json type_json(const std::set<std::string>& types);
// Types in both sets, where integer is in number.
std::set<std::string> type_meet(const std::set<std::string>& a, const std::set<std::string>& b);

std::optional<double> number_kw(const Json& s, const char* k);
// A non-negative integer keyword (minItems, maxLength ...); `dflt` when absent.
int64_t count_kw(const Json& s, const char* k, int64_t dflt);

std::string sep_comma(Whitespace ws);
std::string sep_colon(Whitespace ws);
std::string pointer_escape(const std::string& k);

// allOf of two schemas as JSON, simplified when one is true / false or both are equal.
Json all_of2(const Json& a, const Json& b);
// A schema's own if/then/else as a clause {"if", "then"?, "else"?}; null when it has none (an
// `if` without then/else, or then/else without `if`, asserts nothing).
Json conditional_of(const Json& s);

}  // namespace ringlm::guided::schema
