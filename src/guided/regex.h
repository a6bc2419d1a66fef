// Regular languages over Unicode code points: a regex subset (ECMAScript syntax as JSON Schema
// `pattern` uses it) compiled to a deterministic automaton, plus the set operations the schema
// compiler needs (intersection, union, complement, finite string sets).
//
// Supported syntax: literals, `.`, classes `[...]` / `[^...]` with ranges and escapes, `\d \D
// \w \W \s \S`, escapes `\t \n \r \f \v \0 \xHH \uHHHH \u{H..}` and escaped punctuation,
// groups `(...)`, `(?:...)`, `(?<name>...)`, alternation, quantifiers `* + ? {n} {n,} {n,m}`
// (lazy `?` suffix accepted: same language), anchors `^` / `$` anywhere (assertions "at the
// start / end of the input": JSON Schema has no multiline flag; not quantified). Anything else
// (lookaround, backreferences, `\b`, flags) is rejected with an Error naming the construct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringlm::guided {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// A set of code points as sorted, disjoint, non-adjacent closed ranges.
class CharSet {
 public:
  CharSet() = default;
  static CharSet range(uint32_t lo, uint32_t hi);
  static CharSet any();  // every code point
  void add(uint32_t lo, uint32_t hi);
  void add(const CharSet& other);
  CharSet negated() const;
  bool contains(uint32_t cp) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

 private:
  void normalize();
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

// Deterministic automaton over code points; state 0 is the start. Missing transitions reject.
struct CpDfa {
  struct Edge {
    uint32_t lo, hi;
    int to;
  };
  struct State {
    std::vector<Edge> edges;  // sorted by lo, disjoint
    bool accept = false;
  };
  std::vector<State> states;

  bool matches(std::u32string_view text) const;
  bool accepts_everything() const;  // the universal language (any string)
  bool is_empty_language() const;
  // Removes states that cannot reach an accepting state (and edges to them).
  void prune_dead();
};

// Bounds on the automata built (each refused with an Error past it): a regex's Thompson NFA,
// and the DFA states of a determinisation or of an intersection / union product.
struct RegexLimits {
  size_t nfa_states = 40000;
  size_t dfa_states = 6000;
};

// Compiles `pattern`. With search semantics (JSON Schema's `pattern`) an alternative without a
// leading `^` may be preceded by anything and one without a trailing `$` followed by anything.
CpDfa compile_regex(std::string_view pattern, bool search_semantics, const RegexLimits& limits = {});

CpDfa dfa_universal();
CpDfa dfa_intersect(const CpDfa& a, const CpDfa& b, const RegexLimits& limits = {});
CpDfa dfa_union(const CpDfa& a, const CpDfa& b, const RegexLimits& limits = {});
CpDfa dfa_complement(const CpDfa& a);
CpDfa dfa_literals(const std::vector<std::u32string>& words);

// The words of `dfa` with a length (code points) in [min_len, max_len] (max_len < 0: unbounded),
// in code point order, when there are at most `limit` of them; nullopt when there are more (or
// infinitely many).
std::optional<std::vector<std::u32string>> dfa_words(const CpDfa& dfa, int64_t min_len, int64_t max_len, size_t limit);

// UTF-8 helpers (invalid sequences throw Error).
std::u32string utf8_to_u32(std::string_view s);
void append_utf8(std::string& out, uint32_t cp);

}  // namespace ringlm::guided
