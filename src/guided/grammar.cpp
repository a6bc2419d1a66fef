#include "guided/grammar.h"

#include <algorithm>
#include <array>
#include <climits>
#include <map>

#include "util/error.h"

namespace ringlm::guided {

namespace {

// Splits [lo, hi] (no surrogates inside) into runs whose UTF-8 encodings are products of byte
// ranges, calling emit(ranges, n) with n byte ranges.
template <typename Emit>
void utf8_sequences(uint32_t lo, uint32_t hi, Emit&& emit) {
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) utf8_sequences(lo, 0xD7FF, emit);
    if (hi > 0xDFFF) utf8_sequences(0xE000, hi, emit);
    return;
  }
  for (uint32_t b : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= b && hi > b) {
      utf8_sequences(lo, b, emit);
      utf8_sequences(b + 1, hi, emit);
      return;
    }
  }
  int n = lo < 0x80 ? 1 : lo < 0x800 ? 2 : lo < 0x10000 ? 3 : 4;
  for (int i = 1; i < n; ++i) {
    uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_sequences(lo, lo | m, emit);
        utf8_sequences((lo | m) + 1, hi, emit);
        return;
      }
      if ((hi & m) != m) {
        utf8_sequences(lo, (hi & ~m) - 1, emit);
        utf8_sequences(hi & ~m, hi, emit);
        return;
      }
    }
  }
  std::string a, b;
  append_utf8(a, lo);
  append_utf8(b, hi);
  std::array<std::pair<uint8_t, uint8_t>, 4> ranges{};
  for (int i = 0; i < n; ++i) ranges[i] = {uint8_t(a[i]), uint8_t(b[i])};
  emit(ranges, n);
}

const char* short_escape(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return nullptr;
  }
}

}  // namespace

std::string json_escape(std::string_view utf8) {
  std::string out;
  for (char ch : utf8) {
    auto c = static_cast<unsigned char>(ch);
    if (const char* e = short_escape(c)) {
      out += e;
    } else if (c < 0x20) {
      static const char* kHex = "0123456789abcdef";
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

uint32_t GrammarBuilder::new_state() {
  if (g_->states.size() >= max_states_) fail("schema grammar is too large (more than ", max_states_, " states)");
  g_->states.emplace_back();
  return uint32_t(g_->states.size() - 1);
}

uint32_t GrammarBuilder::new_rule() {
  uint32_t s = new_state();
  g_->rule_start.push_back(s);
  return uint32_t(g_->rule_start.size() - 1);
}

void GrammarBuilder::bytes(uint32_t from, uint32_t to, uint8_t lo, uint8_t hi) {
  g_->states[from].edges.push_back({lo, hi, to});
}

void GrammarBuilder::eps(uint32_t from, uint32_t to) { g_->states[from].eps.push_back(to); }

void GrammarBuilder::call(uint32_t from, uint32_t rule, uint32_t to) { g_->states[from].calls.push_back({rule, to}); }

void GrammarBuilder::literal(uint32_t from, uint32_t to, std::string_view text) {
  if (text.empty()) {
    eps(from, to);
    return;
  }
  uint32_t cur = from;
  for (size_t i = 0; i < text.size(); ++i) {
    uint32_t next = i + 1 == text.size() ? to : new_state();
    auto b = static_cast<uint8_t>(text[i]);
    bytes(cur, next, b, b);
    cur = next;
  }
}

void GrammarBuilder::utf8_chars(uint32_t from, uint32_t to, const CharSet& set) {
  for (auto [lo, hi] : set.ranges()) {
    utf8_sequences(lo, hi, [&](const std::array<std::pair<uint8_t, uint8_t>, 4>& r, int n) {
      uint32_t cur = from;
      for (int i = 0; i < n; ++i) {
        uint32_t next = i + 1 == n ? to : new_state();
        bytes(cur, next, r[i].first, r[i].second);
        cur = next;
      }
    });
  }
}

void GrammarBuilder::json_chars(uint32_t from, uint32_t to, const CharSet& set) {
  // Plain code points go out as UTF-8; the others share one "\" state and one "\u00" chain.
  CharSet plain;
  uint32_t backslash = UINT32_MAX, u00_0 = UINT32_MAX, u00_1 = UINT32_MAX;
  auto ensure_backslash = [&] {
    if (backslash == UINT32_MAX) {
      backslash = new_state();
      bytes(from, backslash, '\\', '\\');
    }
  };
  for (auto [lo, hi] : set.ranges()) {
    for (uint32_t cp = lo; cp <= hi && cp < 0x60; ++cp) {
      if (const char* e = short_escape(cp)) {
        ensure_backslash();
        bytes(backslash, to, uint8_t(e[1]), uint8_t(e[1]));
      } else if (cp < 0x20) {
        ensure_backslash();
        if (u00_0 == UINT32_MAX) {
          uint32_t u = new_state(), z1 = new_state(), z2 = new_state();
          bytes(backslash, u, 'u', 'u');
          bytes(u, z1, '0', '0');
          bytes(z1, z2, '0', '0');
          u00_0 = new_state();
          u00_1 = new_state();
          bytes(z2, u00_0, '0', '0');
          bytes(z2, u00_1, '1', '1');
        }
        static const char* kHex = "0123456789abcdef";
        uint8_t d = uint8_t(kHex[cp & 15]);
        bytes(cp < 0x10 ? u00_0 : u00_1, to, d, d);
      } else {
        plain.add(cp, cp);
      }
    }
    if (hi >= 0x60) plain.add(std::max(lo, 0x60u), hi);
  }
  utf8_chars(from, to, plain);
}

Grammar GrammarBuilder::finish(uint32_t root_rule) {
  g_->root_rule = root_rule;
  prune_dead_ends(*g_);
  return std::move(*g_);
}

// A state is *completable* when some path from it finishes its rule: it is final, or a byte or
// epsilon edge leads to a completable state, or it calls a rule whose start is completable and
// returns to a completable state. A lazy string body is completable when the state after its
// closing quote is (its own dead ends are pruned by the body's liveness table). Computed as a
// least fixed point with a worklist over reverse edges, then every edge into a state that is
// not completable, and every call to a rule that cannot finish, is removed. What remains has
// no dead ends: every prefix the matcher can reach extends to a complete value.
void prune_dead_ends(Grammar& g) {
  const size_t n = g.states.size();
  std::vector<char> done(n, 0);
  // Reverse lists: for edges/eps, the predecessor; for calls, the (caller, call index) pairs
  // that must be rechecked when the return state or the callee's start becomes completable.
  std::vector<std::vector<uint32_t>> preds(n);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> call_watch(n);
  std::vector<uint32_t> work;
  auto mark = [&](uint32_t s) {
    if (!done[s]) {
      done[s] = 1;
      work.push_back(s);
    }
  };
  for (uint32_t s = 0; s < n; ++s) {
    const Grammar::State& st = g.states[s];
    for (auto& e : st.edges) preds[e.to].push_back(s);
    for (uint32_t t : st.eps) preds[t].push_back(s);
    for (uint32_t c = 0; c < st.calls.size(); ++c) {
      call_watch[st.calls[c].ret].emplace_back(s, c);
      call_watch[g.rule_start[st.calls[c].rule]].emplace_back(s, c);
    }
    if (st.lazy_body >= 0) preds[g.bodies[size_t(st.lazy_body)].to].push_back(s);
  }
  for (uint32_t s = 0; s < n; ++s)
    if (g.states[s].final) mark(s);
  while (!work.empty()) {
    uint32_t t = work.back();
    work.pop_back();
    for (uint32_t p : preds[t]) mark(p);
    for (auto [s, c] : call_watch[t]) {
      const Grammar::Call& call = g.states[s].calls[c];
      if (done[call.ret] && done[g.rule_start[call.rule]]) mark(s);
    }
  }
  for (uint32_t s = 0; s < n; ++s) {
    Grammar::State& st = g.states[s];
    std::erase_if(st.edges, [&](const Grammar::ByteEdge& e) { return !done[e.to]; });
    std::erase_if(st.eps, [&](uint32_t t) { return !done[t]; });
    std::erase_if(st.calls, [&](const Grammar::Call& c) { return !done[c.ret] || !done[g.rule_start[c.rule]]; });
  }
}

uint32_t GrammarBuilder::add_body(Grammar::Body body) {
  g_->bodies.push_back(std::move(body));
  return uint32_t(g_->bodies.size() - 1);
}

uint32_t GrammarBuilder::body_state(uint32_t body, int64_t k, int32_t d) {
  auto [it, inserted] = g_->body_states.emplace(std::make_tuple(body, k, d), 0);
  if (inserted) {
    uint32_t s = new_state();
    g_->states[s].lazy_body = int32_t(body);
    g_->states[s].lazy_k = k;
    g_->states[s].lazy_d = d;
    it->second = s;
  }
  return it->second;
}

void expand_body_state(Grammar& g, uint32_t s) {
  if (g.states[s].lazy_body < 0) return;
  uint32_t bi = uint32_t(g.states[s].lazy_body);
  int64_t k = g.states[s].lazy_k;
  int32_t d = g.states[s].lazy_d;
  g.states[s].lazy_body = -1;  // expanded
  const Grammar::Body& body = g.bodies[bi];
  const CpDfa& dfa = *body.dfa;
  GrammarBuilder b(&g);
  if (dfa.states[size_t(d)].accept && k >= body.min) b.literal(s, body.to, "\"");
  // Plain fast path (any plain run within the bound is allowed) needs every such run to stay
  // closable: true for a universal DFA, and for total states when the length is unbounded
  // (from a co-reachable total state arbitrarily long accepted continuations exist).
  if (body.universal || (body.total[size_t(d)] && body.max < 0)) {
    b.set_plain(s, body.max >= 0 ? int32_t(std::min<int64_t>(body.max - k, INT32_MAX)) : Grammar::kPlainUnbounded);
  }
  if (body.max >= 0 && k >= body.max) return;
  // Unbounded: counts saturate at min (only "reached min yet" matters).
  int64_t nk = body.max >= 0 ? k + 1 : std::min(k + 1, body.min);
  size_t nd = dfa.states.size();
  std::map<int, CharSet> by_target;
  for (auto& e : dfa.states[size_t(d)].edges) {
    if (!body.live.empty() && !body.live[size_t(nk) * nd + size_t(e.to)]) continue;  // dead end
    by_target[e.to].add(e.lo, e.hi);
  }
  for (auto& [t, cs] : by_target) {
    uint32_t next = b.body_state(bi, nk, t);
    b.json_chars(s, next, cs);
  }
}

}  // namespace ringlm::guided
