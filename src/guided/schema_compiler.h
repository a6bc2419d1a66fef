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

struct CompileOptions {
  Whitespace whitespace = Whitespace::kCompact;
};

struct CompiledSchema {
  Grammar grammar;
  // Declared property names in the order the grammar emits them (first declaration wins);
  // serialise instances with reorder_keys(instance, property_order) to match the grammar.
  std::vector<std::string> property_order;
};

CompiledSchema compile_schema(const Json& schema, const CompileOptions& options = {});

// Canonical serialisation in a whitespace style (nlohmann number formatting, canonical escapes).
std::string serialize_json(const Json& value, Whitespace ws);

// Recursively reorders object keys: names in `order` first (in that order), then the others in
// their original order.
Json reorder_keys(const Json& value, const std::vector<std::string>& order);

}  // namespace ringlm::guided
