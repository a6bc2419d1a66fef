// Resolution of `$ref` values inside one schema document: "#" and JSON pointers ("#/$defs/x"),
// `$id` bases (absolute, or matched by their last path segment) and `$anchor` / draft-4 "#name"
// ids. Remote documents are not fetched: an unresolvable reference yields nullptr.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "guided/json.h"

namespace ringlm::guided {

class RefResolver {
 public:
  // `root` must outlive the resolver. `draft4` selects "id" instead of "$id".
  RefResolver(const Json& root, bool draft4);
  const Json* resolve(const std::string& ref) const;
  const Json& root() const { return *root_; }

 private:
  void index(const Json& s);
  const Json* root_;
  bool draft4_;
  std::unordered_map<std::string, const Json*> ids_;
};

// Resolves a JSON pointer ("/a/b~1c", percent-decoded) inside `root`; nullptr if absent.
const Json* resolve_json_pointer(const Json& root, std::string_view pointer);

}  // namespace ringlm::guided
