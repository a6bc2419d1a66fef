// Byte-level grammar: a recursive transition network. Each rule is a small nondeterministic
// automaton over bytes whose states may also call another rule (push) and continue at a return
// state when it finishes. Nested JSON (objects in arrays in objects...) and recursive schemas
// ($ref) are rules calling rules; leaf values (strings with patterns and length bounds, numbers
// with bounds, enum literals) are byte paths inside a rule.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
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
    // Lazily expanded string-body state (body index, code points so far, DFA state); its
    // edges are created by expand_body_state() on first use.
    int32_t lazy_body = -1;
    int32_t lazy_d = 0;
    int64_t lazy_k = 0;
    // A state between the brackets of an array whose string items must be distinct
    // (uniqueItems that the grammar cannot count): the Matcher tracks and compares its items.
    bool unique_array = false;
  };
  // A JSON string body: code points in `dfa`'s language with a length in [min, max] (max < 0:
  // unbounded), followed by the closing quote into state `to`. Expanded per (length, DFA state)
  // on demand, so long maxLength values cost nothing until generated.
  struct Body {
    std::shared_ptr<const CpDfa> dfa;
    std::vector<char> total;  // per DFA state: every code point sequence survives
    int64_t min = 0, max = -1;
    uint32_t to = 0;
    // live[k * dfa states + d]: from (k code points, DFA state d) the string can still be
    // closed within the bounds (k saturates at min when max is unbounded). Empty: all live.
    std::vector<char> live;
    bool universal = false;  // the DFA is one accepting state looping on every code point
  };
  std::vector<State> states;
  // Some object can take several keys from one infinite key language (additionalProperties or
  // patternProperties), which a grammar cannot keep distinct; the Matcher then refuses tokens
  // that would repeat a key of the same object (matcher.h).
  bool distinct_keys = false;
  // Some array must have distinct string items (states marked unique_array): the Matcher
  // refuses tokens that would close an item equal to an earlier item of the same array.
  bool distinct_items = false;
  bool distinct_literals = false;  // ... and some such array may hold true / false / null
  // Lenient compilation: what the grammar leaves to the validator (CompiledSchema::unenforced).
  std::vector<std::string> unenforced;
  std::vector<uint32_t> rule_start;
  uint32_t root_rule = 0;
  std::vector<Body> bodies;
  std::map<std::tuple<uint32_t, int64_t, int32_t>, uint32_t> body_states;
};

// Removes every edge, epsilon move and call that leads where the rule can no longer finish (see
// grammar.cpp); GrammarBuilder::finish runs it, so compiled grammars never dead-end.
void prune_dead_ends(Grammar& g);

// Creates the edges of a lazy body state (no-op for other or already expanded states).
// Appends states: references into g.states are invalidated.
void expand_body_state(Grammar& g, uint32_t state);

class GrammarBuilder {
 public:
  GrammarBuilder() : g_(&own_) {}
  explicit GrammarBuilder(Grammar* target) : g_(target) {}
  GrammarBuilder(const GrammarBuilder&) = delete;
  GrammarBuilder& operator=(const GrammarBuilder&) = delete;

  uint32_t new_state();
  // Registers a string body; body_state(b, 0, 0) is its entry (just after the opening quote).
  uint32_t add_body(Grammar::Body body);
  uint32_t body_state(uint32_t body, int64_t k, int32_t d);
  // A new rule; returns its id. Its start state is rule_start(id).
  uint32_t new_rule();
  uint32_t rule_start(uint32_t rule) const { return g_->rule_start[rule]; }
  void set_final(uint32_t s) { g_->states[s].final = true; }
  void set_plain(uint32_t s, int32_t remaining) { g_->states[s].plain_remaining = remaining; }
  void require_distinct_keys() { g_->distinct_keys = true; }
  void mark_unique_literals() { g_->distinct_literals = true; }
  void mark_unique_array(uint32_t s) {
    g_->states[s].unique_array = true;
    g_->distinct_items = true;
  }
  // new_state() refuses (Error) to grow the grammar past this many states (compile_schema
  // sets CompileLimits::grammar_states; the reply grammars keep the default).
  void set_max_states(size_t n) { max_states_ = n; }

  void bytes(uint32_t from, uint32_t to, uint8_t lo, uint8_t hi);
  void eps(uint32_t from, uint32_t to);
  void call(uint32_t from, uint32_t rule, uint32_t to);
  void literal(uint32_t from, uint32_t to, std::string_view text);
  // Code points of `set` as they appear inside a JSON string: UTF-8, with '"' '\\' and control
  // characters written as their canonical escapes (\" \\ \b \f \n \r \t \u00xx).
  void json_chars(uint32_t from, uint32_t to, const CharSet& set);
  // Code points of `set` as raw UTF-8 (no escaping).
  void utf8_chars(uint32_t from, uint32_t to, const CharSet& set);

  size_t num_states() const { return g_->states.size(); }
  Grammar finish(uint32_t root_rule);

 private:
  Grammar own_;
  Grammar* g_;
  size_t max_states_ = 4'000'000;
};

// The canonical JSON string escape of a code point sequence (as nlohmann::json / json.dumps
// with ensure_ascii=False write it), without the surrounding quotes.
std::string json_escape(std::string_view utf8);

}  // namespace ringlm::guided
