// JSON document type used throughout guided generation. ordered_json keeps object keys in
// document order, which the schema compiler needs (properties are emitted in schema order).
#pragma once

#include <nlohmann/json.hpp>

namespace ringlm::guided {
using Json = nlohmann::ordered_json;
}  // namespace ringlm::guided
