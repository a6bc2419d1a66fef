// JSON Schema -> byte-level Grammar. The grammar generates exactly one serialisation per value:
// object properties in schema order, canonical string escapes, and the configured whitespace
// style (compact `,` `:` or Python json.dumps `, ` `: `). See docs/guided.md for the supported
// keywords and the deliberate restrictions; unsupported assertions throw Error naming them.
#pragma once

#include <string>
#include <vector>

#include "guided/grammar.h"
#include "guided/json.h"

namespace ringlm::guided {

enum class Whitespace { kCompact, kPython };

// kStrict (the default) refuses, with an error naming the keyword and its JSON pointer, every
// assertion the grammar cannot enforce exactly. kLenient compiles such schemas anyway, enforcing
// what it can, and lists in CompiledSchema::unenforced what only the validator checks afterwards.
enum class SchemaMode { kStrict, kLenient };

// "strict" / "lenient" (the CLI flag and the server's request field); throws Error otherwise.
SchemaMode parse_schema_mode(const std::string& text);

struct CompileOptions {
  Whitespace whitespace = Whitespace::kCompact;
  SchemaMode mode = SchemaMode::kStrict;
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
