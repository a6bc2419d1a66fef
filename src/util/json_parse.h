// JSON text -> nlohmann::ordered_json in time linear in the text, for input from outside
// (request bodies, schemas, extract rows).
//
// Why not ordered_json::parse: ordered_json's object is a vector searched linearly on every
// insert, so an object of N distinct keys costs N^2/2 string compares to build. Issue #28
// measured 80 s for a 1 MB request body holding 131k short keys. This parser drives
// nlohmann's own (linear) tokenizer through a SAX handler that appends members directly and
// finds duplicates with a hash index, kept only for objects past a few keys. Depth is checked
// while parsing, so a deep body is refused at the first bracket past the limit.
//
// Duplicate keys keep nlohmann's behaviour: the last value wins, at the first one's position.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace ringlm {

struct JsonParseLimits {
  int max_depth = 256;  // nesting of arrays and objects (the root object or array is depth 1)
};

// Throws ringlm::Error: invalid_argument for malformed text (the message gives nlohmann's
// reason with its byte offset), resource_limit when nesting exceeds limits.max_depth.
nlohmann::ordered_json parse_json(std::string_view text, const JsonParseLimits& limits = {});

}  // namespace ringlm
