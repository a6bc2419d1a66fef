// Regex parsing: pattern text -> RegexNode tree (regex_syntax.h). The automaton construction
// from the tree is in regex.cpp.
#include <string>

#include "guided/regex_syntax.h"
#include "util/error.h"

namespace ringlm::guided {
namespace {

using Node = RegexNode;
using NodePtr = RegexNodePtr;

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
  std::vector<RegexAlternative> parse_top() {
    std::vector<RegexAlternative> alts;
    while (true) {
      RegexAlternative a;
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

  // ECMAScript (and Python) reject a quantifier on an anchor ("nothing to repeat").
  void refuse_quantified_anchor() {
    char32_t c = peek();
    if (c == U'*' || c == U'+' || c == U'?') error("quantifier after an anchor");
    if (c == U'{') {
      int mn, mx;
      size_t at = i_;
      if (parse_braces(&mn, &mx)) {
        i_ = at;
        error("quantifier after an anchor");
      }
    }
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
        // Elsewhere an assertion node (regex.cpp tracks where the input starts and ends).
        cat->kids.push_back(make(Node::kEnd));
        refuse_quantified_anchor();
        continue;
      }
      if (peek() == U'^') {
        ++i_;
        cat->kids.push_back(make(Node::kBegin));
        refuse_quantified_anchor();
        continue;
      }
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

}  // namespace

std::vector<RegexAlternative> parse_regex(std::string_view pattern) { return Parser(pattern).parse_top(); }

}  // namespace ringlm::guided
