#include "guided/regex.h"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "guided/regex_syntax.h"
#include "util/error.h"
#include "util/utf8.h"

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

// The strict decoding of util/utf8.h, with an error naming the offset of the first bad byte.
std::u32string utf8_to_u32(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8::char_len(s, i);
    if (n == 0) {
      const auto b = static_cast<unsigned char>(s[i]);
      if (utf8::lead_byte(b).need == 0) fail("invalid UTF-8 byte 0x", std::hex, int(b), " at offset ", std::dec, i);
      if (utf8::is_incomplete_prefix(s, i)) fail("truncated UTF-8 sequence at offset ", i);
      fail("invalid UTF-8 sequence at offset ", i);
    }
    out.push_back(utf8::decode_at(s, i, n));
    i += n;
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) { utf8::append(out, cp); }

// ---------------------------------------------------------------- Thompson NFA

namespace {

using Node = RegexNode;

struct Nfa {
  struct State {
    std::vector<std::pair<CharSet, int>> edges;
    std::vector<int> eps;
    // Inner anchors (RegexNode::kBegin / kEnd): epsilon moves allowed only at the start of the
    // input / committing to its end. with_anchors() turns them into plain epsilon moves.
    std::vector<int> begin_eps, end_eps;
  };
  bool has_anchors = false;
  std::vector<State> states;
  size_t max_states = RegexLimits{}.nfa_states;
  int add() {
    if (states.size() >= max_states) fail("regex is too large (more than ", max_states, " NFA states)");
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
      case Node::kBegin:
        states[s].begin_eps.push_back(e);
        has_anchors = true;
        break;
      case Node::kEnd:
        states[s].end_eps.push_back(e);
        has_anchors = true;
        break;
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

// The NFA with its anchor moves resolved: the product of each state with a phase of two bits,
// "a code point was consumed" and "the end was asserted". A code point needs the end not
// asserted and sets the first bit; `^` needs it clear (nothing consumed yet); `$` sets the
// second (nothing may follow). Only phases reachable from (start, 0) are built; `accept` in
// any phase accepts, so it maps to one new accepting state. Returns {start, accept}.
std::pair<int, int> with_anchors(const Nfa& in, int start, int accept, Nfa& out) {
  constexpr int kConsumed = 1, kEnded = 2;
  std::map<std::pair<int, int>, int> ids;
  std::vector<std::pair<int, int>> work;
  auto id = [&](int s, int phase) {
    auto [it, inserted] = ids.emplace(std::make_pair(s, phase), 0);
    if (inserted) {
      it->second = out.add();
      work.emplace_back(s, phase);
    }
    return it->second;
  };
  const int new_start = id(start, 0);
  const int new_accept = out.add();
  for (size_t k = 0; k < work.size(); ++k) {
    const auto [s, phase] = work[k];
    const int from = ids.at(work[k]);
    const Nfa::State& st = in.states[size_t(s)];
    if (s == accept) out.states[size_t(from)].eps.push_back(new_accept);
    if (!(phase & kEnded)) {
      for (auto& [cs, to] : st.edges) {
        const int t = id(to, phase | kConsumed);
        out.states[size_t(from)].edges.emplace_back(cs, t);
      }
    }
    for (int to : st.eps) {
      const int t = id(to, phase);
      out.states[size_t(from)].eps.push_back(t);
    }
    if (!(phase & kConsumed)) {
      for (int to : st.begin_eps) {
        const int t = id(to, phase);
        out.states[size_t(from)].eps.push_back(t);
      }
    }
    for (int to : st.end_eps) {
      const int t = id(to, phase | kEnded);
      out.states[size_t(from)].eps.push_back(t);
    }
  }
  return {new_start, new_accept};
}

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

CpDfa determinize(const Nfa& nfa, int start, int accept, size_t max_states) {
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
        if (sets.size() >= max_states) fail("regex is too complex (more than ", max_states, " DFA states)");
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
CpDfa product(const CpDfa& a, const CpDfa& b, Op op, bool need_both, size_t max_states) {
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
        if (work.size() >= max_states) fail("automaton product is too large");
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

CpDfa compile_regex(std::string_view pattern, bool search_semantics, const RegexLimits& limits) {
  auto alts = parse_regex(pattern);
  Nfa nfa;
  nfa.max_states = limits.nfa_states;
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
  if (nfa.has_anchors) {
    Nfa resolved;
    resolved.max_states = limits.nfa_states;
    auto [s, a] = with_anchors(nfa, start, accept, resolved);
    CpDfa dfa = determinize(resolved, s, a, limits.dfa_states);
    dfa.prune_dead();
    return dfa;
  }
  CpDfa dfa = determinize(nfa, start, accept, limits.dfa_states);
  dfa.prune_dead();
  return dfa;
}

CpDfa dfa_universal() {
  CpDfa d;
  d.states.push_back({{{0, kMaxCodePoint, 0}}, true});
  return d;
}

CpDfa dfa_intersect(const CpDfa& a, const CpDfa& b, const RegexLimits& limits) {
  return product(a, b, [](bool x, bool y) { return x && y; }, true, limits.dfa_states);
}

CpDfa dfa_union(const CpDfa& a, const CpDfa& b, const RegexLimits& limits) {
  return product(a, b, [](bool x, bool y) { return x || y; }, false, limits.dfa_states);
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
