#include "guided/regex.h"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "util/error.h"

namespace ringlm::guided {

// ---------------------------------------------------------------- CharSet

CharSet CharSet::range(uint32_t lo, uint32_t hi) {
  CharSet s;
  s.add(lo, hi);
  return s;
}

CharSet CharSet::any() { return range(0, kMaxCodePoint); }

void CharSet::add(uint32_t lo, uint32_t hi) {
  if (lo > hi) return;
  ranges_.emplace_back(lo, hi);
  normalize();
}

void CharSet::add(const CharSet& other) {
  ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
  normalize();
}

void CharSet::normalize() {
  std::sort(ranges_.begin(), ranges_.end());
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (auto r : ranges_) {
    if (!out.empty() && r.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  ranges_ = std::move(out);
}

CharSet CharSet::negated() const {
  CharSet out;
  uint32_t next = 0;
  for (auto [lo, hi] : ranges_) {
    if (lo > next) out.ranges_.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.ranges_.emplace_back(next, kMaxCodePoint);
  return out;
}

bool CharSet::contains(uint32_t cp) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), std::make_pair(cp, kMaxCodePoint + 1));
  if (it == ranges_.begin()) return false;
  --it;
  return cp >= it->first && cp <= it->second;
}

// ---------------------------------------------------------------- UTF-8

std::u32string utf8_to_u32(std::string_view s) {
  std::u32string out;
  size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    uint32_t cp;
    int extra;
    if (b < 0x80) {
      cp = b, extra = 0;
    } else if (b >= 0xC2 && b <= 0xDF) {
      cp = b & 0x1F, extra = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      cp = b & 0x0F, extra = 2;
    } else if (b >= 0xF0 && b <= 0xF4) {
      cp = b & 0x07, extra = 3;
    } else {
      fail("invalid UTF-8 byte 0x", std::hex, int(b), " at offset ", std::dec, i);
    }
    for (int k = 1; k <= extra; ++k) {
      if (i + k >= s.size()) fail("truncated UTF-8 sequence at offset ", i);
      auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) fail("invalid UTF-8 continuation at offset ", i + k);
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) {
      fail("invalid UTF-8 sequence at offset ", i);
    }
    out.push_back(cp);
    i += extra + 1;
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

// ---------------------------------------------------------------- regex parsing

namespace {

constexpr size_t kMaxNfaStates = 40000;
constexpr size_t kMaxDfaStates = 6000;

struct Node {
  enum Kind { kEmpty, kSet, kConcat, kAlt, kRepeat } kind = kEmpty;
  CharSet set;
  std::vector<std::unique_ptr<Node>> kids;
  int min = 0, max = 0;  // kRepeat; max < 0 = unbounded
};
using NodePtr = std::unique_ptr<Node>;

NodePtr make(Node::Kind k) {
  auto n = std::make_unique<Node>();
  n->kind = k;
  return n;
}

CharSet digit_set() { return CharSet::range('0', '9'); }
CharSet word_set() {
  CharSet s = CharSet::range('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_', '_');
  return s;
}
CharSet space_set() {
  CharSet s;
  for (uint32_t c : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u,
                     0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) {
    s.add(c, c);
  }
  s.add(0x2000, 0x200A);
  return s;
}

class Parser {
 public:
  explicit Parser(std::string_view pattern) : src_(pattern), p_(utf8_to_u32(pattern)) {}

  // Top level: alternatives, each with its own anchoring.
  struct Alternative {
    NodePtr node;
    bool anchored_start = false, anchored_end = false;
  };
  std::vector<Alternative> parse_top() {
    std::vector<Alternative> alts;
    while (true) {
      Alternative a;
      if (peek() == U'^') {
        ++i_;
        a.anchored_start = true;
      }
      a.node = parse_concat(/*top=*/true, &a.anchored_end);
      alts.push_back(std::move(a));
      if (i_ >= p_.size()) break;
      if (p_[i_] == U'|') {
        ++i_;
        continue;
      }
      error("unbalanced ')'");
    }
    return alts;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    fail("regex '", std::string(src_), "': ", what, " at position ", i_);
  }
  char32_t peek() const { return i_ < p_.size() ? p_[i_] : 0; }
  bool eof() const { return i_ >= p_.size(); }

  NodePtr parse_alt() {
    auto first = parse_concat(false, nullptr);
    if (peek() != U'|') return first;
    auto alt = make(Node::kAlt);
    alt->kids.push_back(std::move(first));
    while (peek() == U'|') {
      ++i_;
      alt->kids.push_back(parse_concat(false, nullptr));
    }
    return alt;
  }

  NodePtr parse_concat(bool top, bool* anchored_end) {
    auto cat = make(Node::kConcat);
    while (!eof() && peek() != U'|' && peek() != U')') {
      if (peek() == U'$') {
        ++i_;
        if (top && (eof() || peek() == U'|')) {
          *anchored_end = true;
          break;
        }
        error("'$' anchor inside the pattern is not supported");
      }
      if (peek() == U'^') error("'^' anchor inside the pattern is not supported");
      auto atom = parse_atom();
      atom = parse_quantifiers(std::move(atom));
      cat->kids.push_back(std::move(atom));
    }
    if (top && !eof() && peek() == U')') error("unbalanced ')'");
    return cat;
  }

  NodePtr parse_quantifiers(NodePtr atom) {
    while (!eof()) {
      char32_t c = peek();
      int mn, mx;
      if (c == U'*') {
        mn = 0, mx = -1, ++i_;
      } else if (c == U'+') {
        mn = 1, mx = -1, ++i_;
      } else if (c == U'?') {
        mn = 0, mx = 1, ++i_;
      } else if (c == U'{' && parse_braces(&mn, &mx)) {
      } else {
        break;
      }
      if (peek() == U'?') ++i_;  // lazy: same language
      if (peek() == U'+') error("possessive quantifier is not supported");
      auto rep = make(Node::kRepeat);
      rep->min = mn, rep->max = mx;
      rep->kids.push_back(std::move(atom));
      atom = std::move(rep);
    }
    return atom;
  }

  // {n}, {n,}, {n,m}; returns false (consuming nothing) when '{' is a literal.
  bool parse_braces(int* mn, int* mx) {
    size_t j = i_ + 1;
    auto number = [&](int* out) {
      size_t start = j;
      long v = 0;
      while (j < p_.size() && p_[j] >= U'0' && p_[j] <= U'9') {
        v = v * 10 + (p_[j] - U'0');
        if (v > 100000) v = 100000;
        ++j;
      }
      *out = int(v);
      return j > start;
    };
    if (!number(mn)) return false;
    if (j < p_.size() && p_[j] == U'}') {
      *mx = *mn;
    } else if (j < p_.size() && p_[j] == U',') {
      ++j;
      if (j < p_.size() && p_[j] == U'}') {
        *mx = -1;
      } else if (!number(mx) || j >= p_.size() || p_[j] != U'}') {
        return false;
      }
    } else {
      return false;
    }
    i_ = j + 1;
    if (*mx >= 0 && *mx < *mn) error("quantifier {n,m} with m < n");
    if (*mn > 1000 || *mx > 1000) error("quantifier bound above 1000 is not supported");
    return true;
  }

  NodePtr set_node(CharSet s) {
    auto n = make(Node::kSet);
    n->set = std::move(s);
    return n;
  }

  NodePtr parse_atom() {
    char32_t c = p_[i_];
    if (c == U'(') {
      ++i_;
      if (peek() == U'?') {
        ++i_;
        char32_t k = peek();
        if (k == U':') {
          ++i_;
        } else if (k == U'<' && i_ + 1 < p_.size() && p_[i_ + 1] != U'=' && p_[i_ + 1] != U'!') {
          while (!eof() && peek() != U'>') ++i_;
          if (eof()) error("unterminated group name");
          ++i_;
        } else if (k == U'P' && i_ + 1 < p_.size() && p_[i_ + 1] == U'<') {
          while (!eof() && peek() != U'>') ++i_;
          if (eof()) error("unterminated group name");
          ++i_;
        } else {
          error("lookaround or group flags are not supported");
        }
      }
      auto inner = parse_alt();
      if (peek() != U')') error("missing ')'");
      ++i_;
      return inner;
    }
    if (c == U'[') return set_node(parse_class());
    if (c == U'.') {
      ++i_;
      // Any code point except the ECMAScript line terminators.
      CharSet nl;
      nl.add('\n', '\n');
      nl.add('\r', '\r');
      nl.add(0x2028, 0x2029);
      return set_node(nl.negated());
    }
    if (c == U'\\') {
      ++i_;
      return set_node(parse_escape(/*in_class=*/false));
    }
    if (c == U'*' || c == U'+' || c == U'?') error("quantifier without operand");
    if (c == U')') error("unbalanced ')'");
    ++i_;
    return set_node(CharSet::range(c, c));
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (eof()) error("truncated hex escape");
      char32_t h = p_[i_++];
      int d = (h >= U'0' && h <= U'9')   ? int(h - U'0')
              : (h >= U'a' && h <= U'f') ? int(h - U'a' + 10)
              : (h >= U'A' && h <= U'F') ? int(h - U'A' + 10)
                                         : -1;
      if (d < 0) error("bad hex digit in escape");
      v = v * 16 + uint32_t(d);
    }
    return v;
  }

  // After the backslash.
  CharSet parse_escape(bool in_class) {
    if (eof()) error("trailing backslash");
    char32_t c = p_[i_++];
    switch (c) {
      case U'd': return digit_set();
      case U'D': return digit_set().negated();
      case U'w': return word_set();
      case U'W': return word_set().negated();
      case U's': return space_set();
      case U'S': return space_set().negated();
      case U't': return CharSet::range('\t', '\t');
      case U'n': return CharSet::range('\n', '\n');
      case U'r': return CharSet::range('\r', '\r');
      case U'f': return CharSet::range('\f', '\f');
      case U'v': return CharSet::range('\v', '\v');
      case U'0': return CharSet::range(0, 0);
      case U'x': {
        uint32_t v = hex(2);
        return CharSet::range(v, v);
      }
      case U'u': {
        uint32_t v;
        if (peek() == U'{') {
          ++i_;
          v = 0;
          while (!eof() && peek() != U'}') v = v * 16 + hex(1);
          if (eof()) error("unterminated \\u{...}");
          ++i_;
        } else {
          v = hex(4);
          // A surrogate pair spelled as two escapes.
          if (v >= 0xD800 && v <= 0xDBFF && i_ + 1 < p_.size() && p_[i_] == U'\\' && p_[i_ + 1] == U'u') {
            size_t save = i_;
            i_ += 2;
            uint32_t lo = hex(4);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
              v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
            } else {
              i_ = save;
            }
          }
        }
        if (v > kMaxCodePoint) error("code point out of range");
        return CharSet::range(v, v);
      }
      case U'b':
        if (in_class) return CharSet::range(8, 8);
        error("word boundary \\b is not supported");
      case U'B': error("\\B is not supported");
      case U'p':
      case U'P': error("Unicode property escapes are not supported");
      case U'c': error("control escapes \\c are not supported");
      default:
        if (c >= U'1' && c <= U'9') error("backreferences are not supported");
        if ((c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z')) {
          error(std::string("unknown escape \\") + char(c));
        }
        return CharSet::range(c, c);
    }
  }

  CharSet parse_class() {
    ++i_;  // '['
    bool negate = false;
    if (peek() == U'^') {
      negate = true;
      ++i_;
    }
    CharSet set;
    bool first = true;
    while (true) {
      if (eof()) error("unterminated character class");
      char32_t c = p_[i_];
      if (c == U']' && !first) {
        ++i_;
        break;
      }
      if (c == U']' && first) {
        // ECMAScript: "[]" is the empty class, "[^]" matches anything.
        ++i_;
        break;
      }
      first = false;
      // One class atom: either a single char (can start a range) or an escape set.
      auto atom = [&](uint32_t* single) -> CharSet {
        char32_t a = p_[i_++];
        if (a == U'\\') {
          CharSet s = parse_escape(true);
          if (s.ranges().size() == 1 && s.ranges()[0].first == s.ranges()[0].second) {
            *single = s.ranges()[0].first;
          } else {
            *single = UINT32_MAX;
          }
          return s;
        }
        if (a == U'[' && peek() == U':') error("POSIX classes are not supported");
        *single = a;
        return CharSet::range(a, a);
      };
      uint32_t lo;
      CharSet s = atom(&lo);
      if (peek() == U'-' && i_ + 1 < p_.size() && p_[i_ + 1] != U']' && lo != UINT32_MAX) {
        ++i_;
        uint32_t hi;
        CharSet s2 = atom(&hi);
        if (hi == UINT32_MAX) {
          set.add(s);
          set.add('-', '-');
          set.add(s2);
        } else {
          if (hi < lo) error("character class range out of order");
          set.add(lo, hi);
        }
      } else {
        set.add(s);
      }
    }
    return negate ? set.negated() : set;
  }

  std::string_view src_;
  std::u32string p_;
  size_t i_ = 0;
};

// ---------------------------------------------------------------- Thompson NFA

struct Nfa {
  struct State {
    std::vector<std::pair<CharSet, int>> edges;
    std::vector<int> eps;
  };
  std::vector<State> states;
  int add() {
    if (states.size() >= kMaxNfaStates) fail("regex is too large (more than ", kMaxNfaStates, " NFA states)");
    states.emplace_back();
    return int(states.size()) - 1;
  }
  // Emits node between fresh states; returns {start, end}.
  std::pair<int, int> emit(const Node& n) {
    int s = add(), e = add();
    emit_between(n, s, e);
    return {s, e};
  }
  void emit_between(const Node& n, int s, int e) {
    switch (n.kind) {
      case Node::kEmpty: states[s].eps.push_back(e); break;
      case Node::kSet: states[s].edges.emplace_back(n.set, e); break;
      case Node::kConcat: {
        int cur = s;
        for (size_t k = 0; k < n.kids.size(); ++k) {
          int next = (k + 1 == n.kids.size()) ? e : add();
          emit_between(*n.kids[k], cur, next);
          cur = next;
        }
        if (n.kids.empty()) states[s].eps.push_back(e);
        break;
      }
      case Node::kAlt:
        for (auto& k : n.kids) emit_between(*k, s, e);
        break;
      case Node::kRepeat: {
        const Node& body = *n.kids[0];
        int cur = s;
        for (int k = 0; k < n.min; ++k) {
          int next = add();
          emit_between(body, cur, next);
          cur = next;
        }
        if (n.max < 0) {
          // cur -> body -> cur loop
          int loop_in = add(), loop_out = add();
          states[cur].eps.push_back(loop_in);
          emit_between(body, loop_in, loop_out);
          states[loop_out].eps.push_back(loop_in);
          states[loop_out].eps.push_back(e);
          states[cur].eps.push_back(e);
        } else {
          for (int k = n.min; k < n.max; ++k) {
            int next = add();
            states[cur].eps.push_back(e);
            emit_between(body, cur, next);
            cur = next;
          }
          states[cur].eps.push_back(e);
        }
        break;
      }
    }
  }
};

void eps_close(const Nfa& nfa, std::vector<int>& set) {
  std::vector<char> seen(nfa.states.size(), 0);
  for (int s : set) seen[s] = 1;
  for (size_t k = 0; k < set.size(); ++k) {
    for (int t : nfa.states[set[k]].eps) {
      if (!seen[t]) {
        seen[t] = 1;
        set.push_back(t);
      }
    }
  }
  std::sort(set.begin(), set.end());
}

CpDfa determinize(const Nfa& nfa, int start, int accept) {
  CpDfa dfa;
  std::map<std::vector<int>, int> ids;
  std::vector<std::vector<int>> sets;
  std::vector<int> init{start};
  eps_close(nfa, init);
  ids[init] = 0;
  sets.push_back(init);
  dfa.states.emplace_back();
  for (size_t d = 0; d < sets.size(); ++d) {
    std::vector<int> cur = sets[d];
    dfa.states[d].accept = std::binary_search(cur.begin(), cur.end(), accept);
    // Elementary intervals from all range boundaries.
    std::vector<uint32_t> cuts;
    for (int s : cur) {
      for (auto& [cs, to] : nfa.states[s].edges) {
        for (auto [lo, hi] : cs.ranges()) {
          cuts.push_back(lo);
          cuts.push_back(hi + 1);
        }
      }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      uint32_t lo = cuts[k], hi = cuts[k + 1] - 1;
      std::vector<int> next;
      for (int s : cur) {
        for (auto& [cs, to] : nfa.states[s].edges) {
          if (cs.contains(lo)) next.push_back(to);
        }
      }
      if (next.empty()) continue;
      std::sort(next.begin(), next.end());
      next.erase(std::unique(next.begin(), next.end()), next.end());
      eps_close(nfa, next);
      auto [it, inserted] = ids.emplace(next, int(sets.size()));
      if (inserted) {
        if (sets.size() >= kMaxDfaStates) fail("regex is too complex (more than ", kMaxDfaStates, " DFA states)");
        sets.push_back(next);
        dfa.states.emplace_back();
      }
      auto& edges = dfa.states[d].edges;
      if (!edges.empty() && edges.back().to == it->second && edges.back().hi + 1 == lo) {
        edges.back().hi = hi;
      } else {
        edges.push_back({lo, hi, it->second});
      }
    }
  }
  return dfa;
}

// Product construction; op(a_accept, b_accept). A missing side acts as a rejecting sink.
template <typename Op>
CpDfa product(const CpDfa& a, const CpDfa& b, Op op, bool need_both) {
  CpDfa out;
  std::map<std::pair<int, int>, int> ids;
  std::vector<std::pair<int, int>> work{{0, 0}};
  ids[{0, 0}] = 0;
  out.states.emplace_back();
  for (size_t d = 0; d < work.size(); ++d) {
    auto [pa, pb] = work[d];
    bool acc_a = pa >= 0 && a.states[pa].accept, acc_b = pb >= 0 && b.states[pb].accept;
    out.states[d].accept = op(acc_a, acc_b);
    std::vector<uint32_t> cuts;
    if (pa >= 0)
      for (auto& e : a.states[pa].edges) cuts.push_back(e.lo), cuts.push_back(e.hi + 1);
    if (pb >= 0)
      for (auto& e : b.states[pb].edges) cuts.push_back(e.lo), cuts.push_back(e.hi + 1);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    auto target = [](const CpDfa& m, int s, uint32_t cp) {
      if (s < 0) return -1;
      for (auto& e : m.states[s].edges)
        if (cp >= e.lo && cp <= e.hi) return e.to;
      return -1;
    };
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      uint32_t lo = cuts[k], hi = cuts[k + 1] - 1;
      int ta = target(a, pa, lo), tb = target(b, pb, lo);
      if (ta < 0 && tb < 0) continue;
      if (need_both && (ta < 0 || tb < 0)) continue;
      auto [it, inserted] = ids.emplace(std::make_pair(ta, tb), int(work.size()));
      if (inserted) {
        if (work.size() >= kMaxDfaStates) fail("automaton product is too large");
        work.emplace_back(ta, tb);
        out.states.emplace_back();
      }
      auto& edges = out.states[d].edges;
      if (!edges.empty() && edges.back().to == it->second && edges.back().hi + 1 == lo) {
        edges.back().hi = hi;
      } else {
        edges.push_back({lo, hi, it->second});
      }
    }
  }
  out.prune_dead();
  return out;
}

}  // namespace

// ---------------------------------------------------------------- CpDfa

bool CpDfa::matches(std::u32string_view text) const {
  if (states.empty()) return false;
  int s = 0;
  for (char32_t c : text) {
    int next = -1;
    for (auto& e : states[s].edges) {
      if (uint32_t(c) >= e.lo && uint32_t(c) <= e.hi) {
        next = e.to;
        break;
      }
    }
    if (next < 0) return false;
    s = next;
  }
  return states[s].accept;
}

bool CpDfa::accepts_everything() const {
  // Every reachable state accepting and total over all code points.
  if (states.empty()) return false;
  std::vector<char> seen(states.size(), 0);
  std::vector<int> stack{0};
  seen[0] = 1;
  while (!stack.empty()) {
    int s = stack.back();
    stack.pop_back();
    if (!states[s].accept) return false;
    uint32_t next = 0;
    for (auto& e : states[s].edges) {
      if (e.lo != next) return false;
      next = e.hi + 1;
      if (!seen[e.to]) seen[e.to] = 1, stack.push_back(e.to);
    }
    if (next != kMaxCodePoint + 1) return false;
  }
  return true;
}

bool CpDfa::is_empty_language() const {
  for (auto& s : states)
    if (s.accept) return false;
  return true;
}

std::optional<std::vector<std::u32string>> dfa_words(const CpDfa& dfa, int64_t min_len, int64_t max_len, size_t limit) {
  std::vector<std::u32string> out;
  if (dfa.states.empty()) return out;
  CpDfa d = dfa;
  d.prune_dead();
  // Without an upper bound, a live path longer than the number of states repeats a state, and
  // the loop can be pumped: infinitely many words.
  const int64_t cap = max_len >= 0 ? max_len : int64_t(d.states.size());
  std::u32string word;
  bool too_many = false;
  size_t steps = 0;  // bounds the walk when most prefixes only lead to words shorter than min_len
  auto rec = [&](auto&& self, int s) -> void {
    if (too_many || ++steps > 100000) {
      too_many = true;
      return;
    }
    if (d.states[size_t(s)].accept && int64_t(word.size()) >= min_len) {
      if (out.size() >= limit) {
        too_many = true;
        return;
      }
      out.push_back(word);
    }
    if (int64_t(word.size()) >= cap) {
      if (max_len < 0 && !d.states[size_t(s)].edges.empty()) too_many = true;  // a cycle
      return;
    }
    for (auto& e : d.states[size_t(s)].edges) {
      if (e.hi - e.lo >= limit) {
        too_many = true;
        return;
      }
      for (uint32_t c = e.lo; c <= e.hi && !too_many; ++c) {
        word.push_back(char32_t(c));
        self(self, e.to);
        word.pop_back();
      }
    }
  };
  rec(rec, 0);
  if (too_many) return std::nullopt;
  std::sort(out.begin(), out.end());
  return out;
}

void CpDfa::prune_dead() {
  if (states.empty()) return;
  // live = can reach accept
  size_t n = states.size();
  std::vector<char> live(n, 0);
  bool changed = true;
  for (size_t s = 0; s < n; ++s) live[s] = states[s].accept;
  while (changed) {
    changed = false;
    for (size_t s = 0; s < n; ++s) {
      if (live[s]) continue;
      for (auto& e : states[s].edges)
        if (live[e.to]) {
          live[s] = 1, changed = true;
          break;
        }
    }
  }
  for (auto& st : states) {
    std::vector<Edge> kept;
    for (auto& e : st.edges)
      if (live[e.to]) kept.push_back(e);
    st.edges = std::move(kept);
  }
}

CpDfa compile_regex(std::string_view pattern, bool search_semantics) {
  Parser parser(pattern);
  auto alts = parser.parse_top();
  Nfa nfa;
  int start = nfa.add(), accept = nfa.add();
  Node any;
  any.kind = Node::kSet;
  any.set = CharSet::any();
  for (auto& a : alts) {
    int s = nfa.add(), e = nfa.add();
    nfa.states[start].eps.push_back(s);
    nfa.states[e].eps.push_back(accept);
    int body_s = s, body_e = e;
    if (search_semantics && !a.anchored_start) {
      int loop = nfa.add();
      nfa.states[s].eps.push_back(loop);
      nfa.states[loop].edges.emplace_back(CharSet::any(), loop);
      body_s = loop;
    }
    if (search_semantics && !a.anchored_end) {
      int loop = nfa.add();
      nfa.states[loop].edges.emplace_back(CharSet::any(), loop);
      nfa.states[loop].eps.push_back(e);
      body_e = loop;
    }
    nfa.emit_between(*a.node, body_s, body_e);
  }
  CpDfa dfa = determinize(nfa, start, accept);
  dfa.prune_dead();
  return dfa;
}

CpDfa dfa_universal() {
  CpDfa d;
  d.states.push_back({{{0, kMaxCodePoint, 0}}, true});
  return d;
}

CpDfa dfa_intersect(const CpDfa& a, const CpDfa& b) {
  return product(a, b, [](bool x, bool y) { return x && y; }, true);
}

CpDfa dfa_union(const CpDfa& a, const CpDfa& b) {
  return product(a, b, [](bool x, bool y) { return x || y; }, false);
}

CpDfa dfa_complement(const CpDfa& a) {
  // Complete the automaton with a sink, then flip acceptance.
  CpDfa out = a;
  if (out.states.empty()) out.states.emplace_back();
  int sink = int(out.states.size());
  out.states.push_back({{{0, kMaxCodePoint, sink}}, false});
  for (int s = 0; s < sink; ++s) {
    std::vector<CpDfa::Edge> full;
    uint32_t next = 0;
    for (auto& e : out.states[s].edges) {
      if (e.lo > next) full.push_back({next, e.lo - 1, sink});
      full.push_back(e);
      next = e.hi + 1;
    }
    if (next <= kMaxCodePoint) full.push_back({next, kMaxCodePoint, sink});
    out.states[s].edges = std::move(full);
  }
  for (auto& s : out.states) s.accept = !s.accept;
  out.prune_dead();
  return out;
}

CpDfa dfa_literals(const std::vector<std::u32string>& words) {
  // A trie is already deterministic.
  CpDfa d;
  d.states.emplace_back();
  for (auto& w : words) {
    int s = 0;
    for (char32_t c : w) {
      int next = -1;
      for (auto& e : d.states[s].edges)
        if (e.lo == uint32_t(c)) next = e.to;
      if (next < 0) {
        next = int(d.states.size());
        d.states.emplace_back();
        auto& edges = d.states[s].edges;
        CpDfa::Edge ne{uint32_t(c), uint32_t(c), next};
        edges.insert(std::upper_bound(edges.begin(), edges.end(), ne,
                                      [](const CpDfa::Edge& x, const CpDfa::Edge& y) { return x.lo < y.lo; }),
                     ne);
      }
      s = next;
    }
    d.states[s].accept = true;
  }
  return d;
}

}  // namespace ringlm::guided
