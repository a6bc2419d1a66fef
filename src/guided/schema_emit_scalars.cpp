// The emission pass for numbers (bounds and multipleOf as digit automata) and strings (pattern,
// format, length and `not` as one code point automaton, expanded lazily by the grammar).
#include <algorithm>
#include <cmath>

#include "guided/formats.h"
#include "guided/schema_passes.h"
#include "util/error.h"

namespace ringlm::guided::schema {

uint32_t Emitter::plain_string_rule() {
  if (plain_string_ != kNone) return plain_string_;
  plain_string_ = string_rule(dfa_universal(), 0, -1);
  return plain_string_;
}

// ------------------------------------------------------------------ numbers

uint32_t Emitter::number_rule(bool integer, const NumberBounds& nb) {
  std::string re;
  bool bounded = nb.lower || nb.upper;
  auto integral = [](const std::optional<double>& v) { return !v || std::floor(*v) == *v; };
  auto zero = [](const std::optional<double>& v) { return !v || *v == 0; };
  if (!integer && bounded && zero(nb.lower) && zero(nb.upper) && !(nb.lower && nb.upper)) {
    // Bounds at 0 only: the sign decides, so exponent notation (`1e-06` under `minimum: 0`)
    // is generated too. Other bounded numbers are generated without it (docs/guided.md).
    bool positive = nb.lower.has_value();
    re = signed_number_regex(positive, positive ? !nb.lower_exclusive : !nb.upper_exclusive);
  } else if (!integer && bounded && (!integral(nb.lower) || !integral(nb.upper))) {
    // Decimal bounds: built as an automaton (intersection of >= and <= languages).
    std::string key = "decimal:" + (nb.lower ? Json(*nb.lower).dump() : "") + (nb.lower_exclusive ? "x" : "i") +
                      ":" + (nb.upper ? Json(*nb.upper).dump() : "") + (nb.upper_exclusive ? "x" : "i");
    auto it = number_rules_.find(key);
    if (it != number_rules_.end()) return it->second;
    uint32_t r = b_.new_rule();
    number_rules_[key] = r;
    uint32_t end = b_.new_state();
    b_.set_final(end);
    emit_ascii_dfa(dfa_intersect(number_dfa(nb), digit_cap(false)), b_.rule_start(r), end);
    return r;
  }
  if (!re.empty()) {
    // signed_number_regex above
  } else if (integer) {
    re = bounded ? integer_regex(nb) : "^-?(?:0|[1-9][0-9]*)$";
  } else {
    re = bounded ? number_regex(nb) : "^-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$";
  }
  auto it = number_rules_.find(re);
  if (it != number_rules_.end()) return it->second;
  uint32_t r = b_.new_rule();
  number_rules_[re] = r;
  uint32_t end = b_.new_state();
  b_.set_final(end);
  if (re.empty()) return r;
  // Languages with an exponent take the finite-double cap; the others (integers, bounded
  // numbers) only the digit counts, a much smaller automaton to intersect with. The two
  // unbounded languages, in nearly every schema, are intersected once per process.
  const bool exponent = re.find("[eE]") != std::string::npos;
  static const std::string any_integer = "^-?(?:0|[1-9][0-9]*)$";
  static const std::string any_number = "^-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$";
  const bool draft4_integer = integer && cx_.draft4;
  if (re == any_integer || re == any_number) {
    static const CpDfa int_dfa = dfa_intersect(compile_regex(any_integer, false), digit_cap(false));
    static const CpDfa num_dfa = dfa_intersect(compile_regex(any_number, false), digit_cap(true));
    static const CpDfa draft4_int_dfa = dfa_intersect(int_dfa, draft4_integer_texts());
    emit_ascii_dfa(re == any_number ? num_dfa : draft4_integer ? draft4_int_dfa : int_dfa, b_.rule_start(r), end);
    return r;
  }
  CpDfa d = dfa_intersect(compile_regex(re, false), digit_cap(exponent));
  if (draft4_integer) d = dfa_intersect(d, draft4_integer_texts());
  emit_ascii_dfa(d, b_.rule_start(r), end);
  return r;
}

// Every text but those draft4_integer_texts() holds: what a draft-4 validator parses as a
// number that is not an integer, once intersected with a number language.
const CpDfa& Emitter::draft4_non_integer_texts() {
  static const CpDfa non_integers = dfa_complement(draft4_integer_texts());
  return non_integers;
}

// The texts a draft-4 validator counts as integers: literals in [-2^63, 2^64 - 1] and `-0`.
// Every draft-4 integer language is cut to these (a 20-digit literal past 2^64 - 1 is a
// double there, not an integer); built once per process.
const CpDfa& Emitter::draft4_integer_texts() {
  static const CpDfa ints = [] {
    NumberBounds int64_uint64;
    int64_uint64.lower = -9223372036854775808.0;
    int64_uint64.lower_exact = -(ExactInt(1) << 63);
    int64_uint64.upper = 18446744073709551615.0;
    int64_uint64.upper_exact = (ExactInt(1) << 64) - 1;
    return dfa_union(compile_regex(integer_regex(int64_uint64), false), compile_regex("^-0$", false));
  }();
  return ints;
}

// Draft 4's numbers that are not integers: the validator (as the draft says) counts a number as
// an integer when it is written as one and fits int64 / uint64 (`1.0` and `1e2` are not, nor
// is 2^64). So: the language number_rule generates for the bounds (same three cases) minus
// the integer literals in [-2^63, 2^64 - 1] (and `-0`), exactly the texts the validator parses
// as non-integers.
uint32_t Emitter::non_integer_rule(const NumberBounds& nb) {
  const bool bounded = nb.lower || nb.upper;
  auto integral = [](const std::optional<double>& v) { return !v || std::floor(*v) == *v; };
  auto zero = [](const std::optional<double>& v) { return !v || *v == 0; };
  CpDfa lang;
  if (!bounded) {
    static const CpDfa unbounded = dfa_intersect(
        compile_regex("^-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$", false), digit_cap(true));
    lang = unbounded;
  } else if (zero(nb.lower) && zero(nb.upper) && !(nb.lower && nb.upper)) {
    bool positive = nb.lower.has_value();
    lang = dfa_intersect(
        compile_regex(signed_number_regex(positive, positive ? !nb.lower_exclusive : !nb.upper_exclusive), false),
        digit_cap(true));
  } else if (!integral(nb.lower) || !integral(nb.upper)) {
    lang = dfa_intersect(number_dfa(nb), digit_cap(false));
  } else if (std::string re = number_regex(nb); !re.empty()) {
    lang = dfa_intersect(compile_regex(re, false), digit_cap(false));
  }
  const uint32_t r = b_.new_rule();
  const uint32_t end = b_.new_state();
  b_.set_final(end);
  if (!lang.states.empty()) emit_ascii_dfa(dfa_intersect(lang, draft4_non_integer_texts()), b_.rule_start(r), end);
  return r;
}

// Numbers have at most 20 integer digits, 20 fraction digits and an exponent that keeps them
// finite doubles (a deliberate restriction: beyond what a double or int64 carries, and it
// keeps a model from writing digits forever; finite_number_cap).
const CpDfa& Emitter::digit_cap(bool exponent) {
  // Built once per process (the finite cap has a few hundred DFA states).
  static const CpDfa finite = compile_regex(finite_number_cap(), false);
  static const CpDfa digits = compile_regex("^-?[0-9]{1,20}(?:\\.[0-9]{1,20})?$", false);
  return exponent ? finite : digits;
}

// Emits a DFA over ASCII code points as raw bytes.
void Emitter::emit_ascii_dfa(const CpDfa& dfa, uint32_t from, uint32_t to) {
  if (dfa.states.empty()) return;
  std::vector<uint32_t> st(dfa.states.size());
  st[0] = from;
  for (size_t i = 1; i < st.size(); ++i) st[i] = b_.new_state();
  for (size_t i = 0; i < dfa.states.size(); ++i) {
    for (auto& e : dfa.states[i].edges) {
      CharSet cs = CharSet::range(e.lo, e.hi);
      b_.utf8_chars(st[i], st[e.to], cs);
    }
    if (dfa.states[i].accept) b_.eps(st[i], to);
  }
}

void Emitter::number(const Json& s, uint32_t from, uint32_t to, bool integer, bool non_integer) {
  NumberBounds nb;
  // A JSON integer bound keeps every digit (int64 / uint64); compared exactly, so that
  // `maximum: 9223372036854776000` does not round to a double and let 9223372036854776001 in.
  auto exact = [](const Json& v) -> std::optional<ExactInt> {
    if (v.is_number_unsigned()) return ExactInt(v.get<uint64_t>());
    if (v.is_number_integer()) return ExactInt(v.get<int64_t>());
    return std::nullopt;
  };
  // a >= b (lower) / a <= b (upper), exactly when both are integers.
  auto at_least = [&](const Json& a, const std::optional<double>& b, const std::optional<ExactInt>& be) {
    if (auto ae = exact(a); ae && be) return *ae >= *be;
    return a.get<double>() >= *b;
  };
  auto min = number_kw(s, "minimum"), max = number_kw(s, "maximum");
  auto exmin_it = s.find("exclusiveMinimum"), exmax_it = s.find("exclusiveMaximum");
  nb.lower = min;
  nb.upper = max;
  if (min) nb.lower_exact = exact(s["minimum"]);
  if (max) nb.upper_exact = exact(s["maximum"]);
  if (exmin_it != s.end()) {
    if (exmin_it->is_boolean()) {
      nb.lower_exclusive = exmin_it->get<bool>() && min;
    } else if (exmin_it->is_number()) {
      if (!nb.lower || at_least(*exmin_it, nb.lower, nb.lower_exact)) {
        nb.lower = exmin_it->get<double>(), nb.lower_exact = exact(*exmin_it), nb.lower_exclusive = true;
      }
    }
  }
  if (exmax_it != s.end()) {
    if (exmax_it->is_boolean()) {
      nb.upper_exclusive = exmax_it->get<bool>() && max;
    } else if (exmax_it->is_number()) {
      bool tighter = !nb.upper;
      if (!tighter) {
        auto e = exact(*exmax_it);
        tighter = e && nb.upper_exact ? *e <= *nb.upper_exact : exmax_it->get<double>() <= *nb.upper;
      }
      if (tighter) nb.upper = exmax_it->get<double>(), nb.upper_exact = exact(*exmax_it), nb.upper_exclusive = true;
    }
  }
  if (auto m = s.find("multipleOf"); m != s.end()) {
    if (!m->is_number() || m->get<double>() <= 0) fail("keyword 'multipleOf' must be a positive number");
    double k = m->get<double>();
    auto dm = decimal_multiple(k);
    if (!dm) fail("unsupported keyword 'multipleOf' (", k, ": more than 15 significant or 20 fraction digits)");
    // 10^f mod a == 0: every integer is a multiple (multipleOf 1, 0.5, 0.01 on integers).
    int64_t p10 = 1 % dm->a;
    for (int i = 0; i < dm->f; ++i) p10 = p10 * 10 % dm->a;
    if (integer && p10 == 0) {
      // every integer
    } else if (integer && dm->f == 0 && k <= 1000 && !nb.lower && !nb.upper && !cx_.draft4) {
      // (Draft 4 takes the automaton below, which is cut to the literals it counts as integers.)
      b_.call(from, multiple_rule(int64_t(k)), to);
      return;
    } else {
      b_.call(from, multiple_number_rule(integer, nb, *dm, non_integer), to);
      return;
    }
  }
  b_.call(from, non_integer ? non_integer_rule(nb) : number_rule(integer, nb), to);
}

// Numbers (or integers) in the bounds that are exact multiples of a / 10^f, without exponent
// notation: the bounds' language intersected with a remainder automaton (multiple_dfa) and the
// digit cap. Limits: a * (max(f, 1) + 2) <= kMultipleStates, and the product within limits_.regex.
uint32_t Emitter::multiple_number_rule(bool integer, const NumberBounds& nb, DecimalMultiple dm, bool non_integer) {
  constexpr int64_t kMultipleStates = 20000;
  auto refuse = [&](const std::string& why) {
    fail("unsupported keyword 'multipleOf' (", dm.a, "e-", dm.f, ": ", why, ")");
  };
  if (dm.a > kMultipleStates / (std::max(dm.f, 1) + 2)) refuse("its remainder automaton needs more than 20000 states");
  std::string key = "multiple:" + std::to_string(dm.a) + "e-" + std::to_string(dm.f) + (integer ? "i" : "n") + ":" +
                    (nb.lower ? Json(*nb.lower).dump() : "") + (nb.lower_exclusive ? "x" : "i") + ":" +
                    (nb.upper ? Json(*nb.upper).dump() : "") + (nb.upper_exclusive ? "x" : "i");
  if (nb.lower_exact) key += ":L" + std::to_string(int64_t(*nb.lower_exact));
  if (nb.upper_exact) key += ":U" + std::to_string(int64_t(*nb.upper_exact));
  if (non_integer) key += ":draft4-non-integer";
  if (auto it = number_rules_.find(key); it != number_rules_.end()) return it->second;
  // The same language number_rule generates for these bounds (exponent forms included where it
  // has them; the multiple automaton has none, so the intersection drops them).
  bool bounded = nb.lower || nb.upper;
  auto integral = [](const std::optional<double>& v) { return !v || std::floor(*v) == *v; };
  auto zero = [](const std::optional<double>& v) { return !v || *v == 0; };
  CpDfa base;
  if (integer) {
    std::string re = bounded ? integer_regex(nb) : "^-?(?:0|[1-9][0-9]*)$";
    if (!re.empty()) base = compile_regex(re, false);
  } else if (bounded && zero(nb.lower) && zero(nb.upper) && !(nb.lower && nb.upper)) {
    bool positive = nb.lower.has_value();
    base = compile_regex(signed_number_regex(positive, positive ? !nb.lower_exclusive : !nb.upper_exclusive), false);
  } else if (bounded && (!integral(nb.lower) || !integral(nb.upper))) {
    base = number_dfa(nb);
  } else {
    std::string re = bounded ? number_regex(nb) : "^-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?$";
    if (!re.empty()) base = compile_regex(re, false);
  }
  uint32_t r = b_.new_rule();
  number_rules_[key] = r;
  uint32_t end = b_.new_state();
  b_.set_final(end);
  if (base.states.empty()) return r;
  CpDfa d;
  try {
    d = dfa_intersect(dfa_intersect(base, multiple_dfa(dm), limits_.regex), digit_cap(false), limits_.regex);
    if (non_integer) d = dfa_intersect(d, draft4_non_integer_texts(), limits_.regex);
    if (integer && cx_.draft4) d = dfa_intersect(d, draft4_integer_texts(), limits_.regex);
  } catch (const Error& e) {
    refuse(e.what());
  }
  emit_ascii_dfa(d, b_.rule_start(r), end);
  return r;
}

// Integers that are multiples of k: a remainder automaton over the decimal digits.
uint32_t Emitter::multiple_rule(int64_t k) {
  uint32_t r = b_.new_rule();
  uint32_t s = b_.rule_start(r), e = b_.new_state();
  b_.set_final(e);
  uint32_t sign = b_.new_state();
  b_.eps(s, sign);
  b_.literal(s, sign, "-");
  b_.literal(sign, e, "0");
  std::vector<uint32_t> rem(static_cast<size_t>(k));
  for (auto& x : rem) x = b_.new_state();
  for (int d = 1; d <= 9; ++d) b_.bytes(sign, rem[size_t(d % k)], uint8_t('0' + d), uint8_t('0' + d));
  for (int64_t q = 0; q < k; ++q)
    for (int d = 0; d <= 9; ++d) b_.bytes(rem[size_t(q)], rem[size_t((q * 10 + d) % k)], uint8_t('0' + d), uint8_t('0' + d));
  b_.eps(rem[0], e);
  return r;
}

// ------------------------------------------------------------------ strings

CpDfa Emitter::string_dfa(const Json& s, const Extras& x, int64_t* min_len, int64_t* max_len) {
  CpDfa dfa = dfa_universal();
  std::vector<std::string> patterns;
  if (auto p = s.find("pattern"); p != s.end()) {
    if (!p->is_string()) fail("keyword 'pattern' must be a string");
    patterns.push_back(p->get<std::string>());
  }
  for (auto& p : x.patterns) patterns.push_back(p.get<std::string>());
  for (auto& p : patterns) {
    try {
      dfa = dfa_intersect(dfa, cx_.regex(p), limits_.regex);
    } catch (const Error& e) {
      fail("unsupported keyword 'pattern': ", e.what());
    }
  }
  std::vector<std::string> formats;
  if (auto f = s.find("format"); f != s.end() && f->is_string()) formats.push_back(f->get<std::string>());
  for (auto& f : x.formats)
    if (f.is_string()) formats.push_back(f.get<std::string>());
  for (auto& f : formats) {
    auto re = format_regex(f);
    if (re) {
      dfa = dfa_intersect(dfa, cx_.regex(*re), limits_.regex);
    } else if (is_checked_format(f)) {
      fail("unsupported keyword 'format' value '", f, "'");
    } else if (is_asserting_format(f)) {
      cx_.unenforced("format", "format '" + f + "' is not a regular language; neither the grammar nor the validator checks it");
    }
  }
  *min_len = count_kw(s, "minLength", 0);
  *max_len = count_kw(s, "maxLength", -1);
  // A hostname is at most 253 characters (ASCII, so code points = bytes): a length bound on
  // the body rather than a 253-state counter inside the label DFA.
  if (std::find(formats.begin(), formats.end(), "hostname") != formats.end()) {
    *max_len = *max_len < 0 ? 253 : std::min<int64_t>(*max_len, 253);
  }
  return dfa;
}

void Emitter::string_value(const Json& s, const Extras& x, uint32_t from, uint32_t to) {
  int64_t mn, mx;
  CpDfa dfa = string_dfa(s, x, &mn, &mx);
  NotInfo nots = not_;
  std::vector<std::u32string> excluded;
  for (auto& v : nots.values)
    if (v.is_string()) excluded.push_back(utf8_to_u32(v.get<std::string>()));
  if (!excluded.empty()) dfa = dfa_intersect(dfa, dfa_complement(dfa_literals(excluded)));
  for (auto& p : nots.patterns) {
    try {
      dfa = dfa_intersect(dfa, dfa_complement(cx_.regex(p)));
    } catch (const Error& e) {
      fail("unsupported keyword 'not': ", e.what());
    }
  }
  if (dfa.accepts_everything() && mn == 0 && mx < 0) {
    b_.call(from, plain_string_rule(), to);
    return;
  }
  b_.call(from, string_rule(dfa, mn, mx), to);
}

// A rule for `"body"` whose decoded body is in dfa with length (code points) in [mn, mx].
uint32_t Emitter::string_rule(const CpDfa& dfa, int64_t mn, int64_t mx) {
  uint32_t r = b_.new_rule();
  uint32_t s = b_.rule_start(r), e = b_.new_state();
  b_.set_final(e);
  uint32_t body = b_.new_state();
  b_.literal(s, body, "\"");
  string_body(dfa, mn, mx, body, e);
  return r;
}

// Body states from `start` (after the opening quote) to `to` (after the closing quote).
void Emitter::string_body(const CpDfa& dfa, int64_t mn, int64_t mx, uint32_t start, uint32_t to) {
  if (dfa.states.empty() || (mx >= 0 && mn > mx)) return;
  // A state from which every code point sequence survives (all reachable states have a
  // transition for every code point) admits the plain-token fast path: any run of plain
  // characters that fits the length bound is allowed.
  std::vector<char> complete(dfa.states.size(), 0), total(dfa.states.size(), 1);
  for (size_t d = 0; d < dfa.states.size(); ++d) {
    uint32_t next = 0;
    for (auto& e : dfa.states[d].edges) {
      if (e.lo != next) break;
      next = e.hi + 1;
    }
    complete[d] = next == kMaxCodePoint + 1;
  }
  // total = complete and every successor total: greatest fixed point.
  for (size_t d = 0; d < dfa.states.size(); ++d) total[d] = complete[d];
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t d = 0; d < dfa.states.size(); ++d) {
      if (!total[d]) continue;
      for (auto& e : dfa.states[d].edges)
        if (!total[size_t(e.to)]) {
          total[d] = 0, changed = true;
          break;
        }
    }
  }
  Grammar::Body body;
  body.universal = dfa.accepts_everything() && dfa.states.size() == 1;
  if (!body.universal) {
    // Liveness by backward induction over the count: (k, d) is live when it may close here
    // or some edge leads to a live (k+1, d'). Counts saturate at min when max is unbounded.
    int64_t top = mx >= 0 ? mx : mn;
    size_t nd = dfa.states.size();
    if (uint64_t(top + 1) * nd > limits_.string_table) fail("string constraints (pattern x length) are too large");
    body.live.assign(size_t(top + 1) * nd, 0);
    for (int64_t k = top; k >= 0; --k) {
      for (size_t d = 0; d < nd; ++d) {
        bool live = dfa.states[d].accept && k >= mn;
        if (mx < 0 && k == top) {
          // Saturated, unbounded: live iff acceptance is reachable (prune_dead kept only those).
          live = true;
        } else if (!live && (mx < 0 || k < mx)) {
          int64_t nk = mx >= 0 ? k + 1 : std::min(k + 1, mn);
          for (auto& e : dfa.states[d].edges)
            if (body.live[size_t(nk) * nd + size_t(e.to)]) {
              live = true;
              break;
            }
        }
        body.live[size_t(k) * nd + d] = live;
      }
    }
    if (!body.live[0]) return;  // no string satisfies the constraints
  }
  body.dfa = std::make_shared<CpDfa>(dfa);
  body.total = std::move(total);
  body.min = mn;
  body.max = mx;
  body.to = to;
  uint32_t bi = b_.add_body(std::move(body));
  b_.eps(start, b_.body_state(bi, 0, 0));
}

}  // namespace ringlm::guided::schema
