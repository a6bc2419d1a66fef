// The parsed form of a regex (regex.h's syntax subset), shared by the parser (regex_parser.cpp)
// and the automaton construction (regex.cpp). Internal to the guided module.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "guided/regex.h"

namespace ringlm::guided {

struct RegexNode {
  // kBegin / kEnd: `^` / `$` anywhere but the start / end of a top-level alternative (those are
  // RegexAlternative's flags), zero-width assertions "at the start / end of the input" (no
  // multiline flag in JSON Schema), e.g. `^$|(^\S+$)` or `^([^,]|$)`.
  enum Kind { kEmpty, kSet, kConcat, kAlt, kRepeat, kBegin, kEnd } kind = kEmpty;
  CharSet set;
  std::vector<std::unique_ptr<RegexNode>> kids;
  int min = 0, max = 0;  // kRepeat; max < 0 = unbounded
};
using RegexNodePtr = std::unique_ptr<RegexNode>;

// One top-level alternative of a pattern, with its own anchoring (`^` / `$` at the start / end
// of a top-level alternative; anchors elsewhere are kBegin / kEnd nodes).
struct RegexAlternative {
  RegexNodePtr node;
  bool anchored_start = false, anchored_end = false;
};

// Parses `pattern`; throws Error ("regex '...': what at position N") on unsupported syntax.
std::vector<RegexAlternative> parse_regex(std::string_view pattern);

}  // namespace ringlm::guided
