// Byte-level grammar: a recursive transition network. Each rule is a small nondeterministic
// automaton over bytes whose states may also call another rule (push) and continue at a return
// state when it finishes. Nested JSON (objects in arrays in objects...) and recursive schemas
// ($ref) are rules calling rules; leaf values (strings with patterns and length bounds, numbers
// with bounds, enum literals) are byte paths inside a rule.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "guided/regex.h"

namespace ringlm::guided {

struct Grammar {
  struct ByteEdge {
    uint8_t lo, hi;
    uint32_t to;
  };
  struct Call {
    uint32_t rule;
    uint32_t ret;  // state of the caller where matching continues after the rule returns
  };
  // String-body fast path marker: at this state any "plain" code point (one emitted as itself:
  // not '"', '\\' or a control character) is allowed `plain_remaining` more times (kPlainUnbounded:
  // without limit). The matcher uses it to allow whole runs of plain tokens by bitset instead of
  // walking them byte by byte.
  static constexpr int32_t kNotPlain = -2;
  static constexpr int32_t kPlainUnbounded = -1;
  struct State {
    std::vector<ByteEdge> edges;
    std::vector<uint32_t> eps;
    std::vector<Call> calls;
    bool final = false;  // the owning rule may return here
    int32_t plain_remaining = kNotPlain;
  };
  std::vector<State> states;
  std::vector<uint32_t> rule_start;
  uint32_t root_rule = 0;
};

class GrammarBuilder {
 public:
  uint32_t new_state();
  // A new rule; returns its id. Its start state is rule_start(id).
  uint32_t new_rule();
  uint32_t rule_start(uint32_t rule) const { return g_.rule_start[rule]; }
  void set_final(uint32_t s) { g_.states[s].final = true; }
  void set_plain(uint32_t s, int32_t remaining) { g_.states[s].plain_remaining = remaining; }

  void bytes(uint32_t from, uint32_t to, uint8_t lo, uint8_t hi);
  void eps(uint32_t from, uint32_t to);
  void call(uint32_t from, uint32_t rule, uint32_t to);
  void literal(uint32_t from, uint32_t to, std::string_view text);
  // Code points of `set` as they appear inside a JSON string: UTF-8, with '"' '\\' and control
  // characters written as their canonical escapes (\" \\ \b \f \n \r \t \u00xx).
  void json_chars(uint32_t from, uint32_t to, const CharSet& set);
  // Code points of `set` as raw UTF-8 (no escaping).
  void utf8_chars(uint32_t from, uint32_t to, const CharSet& set);

  size_t num_states() const { return g_.states.size(); }
  Grammar finish(uint32_t root_rule);

 private:
  Grammar g_;
};

// The canonical JSON string escape of a code point sequence (as nlohmann::json / json.dumps
// with ensure_ascii=False write it), without the surrounding quotes.
std::string json_escape(std::string_view utf8);

}  // namespace ringlm::guided
