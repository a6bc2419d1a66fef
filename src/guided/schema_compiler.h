// JSON Schema -> byte-level Grammar. The grammar generates exactly one serialisation per value:
// object properties in schema order, canonical string escapes, and the configured whitespace
// style (compact `,` `:` or Python json.dumps `, ` `: `). See docs/guided.md for the supported
// keywords and the deliberate restrictions; unsupported assertions throw Error naming them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "guided/grammar.h"
#include "guided/json.h"
#include "guided/regex.h"

namespace ringlm::guided {

enum class Whitespace { kCompact, kPython };

// kStrict (the default) refuses, with an error naming the keyword and its JSON pointer, every
// assertion the grammar cannot enforce exactly. kLenient compiles such schemas anyway, enforcing
// what it can, and lists in CompiledSchema::unenforced what only the validator checks afterwards.
enum class SchemaMode { kStrict, kLenient };

// "strict" / "lenient" (the CLI flag and the server's request field); throws Error otherwise.
SchemaMode parse_schema_mode(const std::string& text);

// Every bound the compiler enforces, in one place. A schema that would exceed one is refused
// with an Error naming the bound, rather than compiled into a grammar too large to match fast
// (or built for minutes). The defaults are the figures in docs/guided.md.
struct CompileLimits {
  int depth = 150;                        // nested subschemas being compiled (recursion via allOf/anyOf)
  int ref_hops = 64;                      // length of a $ref -> $ref -> ... chain
  int64_t count = 5000;                   // largest min/maxItems, min/maxProperties, minContains expanded
  size_t grammar_states = 4'000'000;      // states of the whole grammar
  uint64_t string_table = 50'000'000;     // one string body: (longest length + 1) x pattern DFA states
  size_t conditional_cases = 96;          // cases an if/then/else group is split into
  size_t unique_values = 20;              // distinct item values under uniqueItems (at most 31: a bitmask)
  size_t unique_sets = 50'000;            // used-value sets a uniqueItems array walks through
  size_t dependencies = 16;               // dependentRequired pairs of one object (at most 32: a bitmask)
  size_t finite_key_words = 64;           // additional keys listed one by one when their language is this small
  size_t declared_keys = 128;             // ... and the object's declared keys stay at most this many
  size_t negation_size = 256;             // subschemas one negation (oneOf exclusivity, `not`) may build
  int negation_depth = 12;                // nesting a negation is pushed through ($ref, properties, items)
  size_t negation_cases = 64;             // alternatives a oneOf branch AND its negated rivals expands into
  RegexLimits regex;                      // automata built from pattern / format / propertyNames
};

struct CompileOptions {
  Whitespace whitespace = Whitespace::kCompact;
  SchemaMode mode = SchemaMode::kStrict;
  CompileLimits limits;
};

struct CompiledSchema {
  Grammar grammar;
  // kLenient: the assertions the grammar does not enforce exactly, one per location, as
  // "keyword at /pointer: why" (e.g. "oneOf at /properties/x/oneOf: branches 0 and 1 may
  // overlap"). Empty in kStrict (those schemas are refused).
  std::vector<std::string> unenforced;
  // The declared property lists of every object schema, in the order the grammar emits them;
  // serialise instances with reorder_keys(instance, property_orders) to match the grammar.
  std::vector<std::vector<std::string>> property_orders;
};

CompiledSchema compile_schema(const Json& schema, const CompileOptions& options = {});

// Canonical serialisation in a whitespace style (nlohmann number formatting, canonical escapes).
std::string serialize_json(const Json& value, Whitespace ws);

// Recursively reorders object keys for the grammar: each object takes the declared list that
// covers most of its keys; those keys come first in that order, the others after in their
// original order (a heuristic: the instance is not matched to its subschema).
Json reorder_keys(const Json& value, const std::vector<std::vector<std::string>>& orders);

}  // namespace ringlm::guided
