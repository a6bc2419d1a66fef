#include "guided/number_regex.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <vector>

#include "util/error.h"

namespace ringlm::guided {
namespace {

constexpr int64_t kLimit = 1'000'000'000'000'000'000;  // 1e18: larger number bounds are refused

// Same-length decimal strings lo <= hi -> regex of the numbers in between (no sign).
std::string same_length(const std::string& lo, const std::string& hi) {
  if (lo == hi) return lo;
  size_t n = lo.size();
  if (n == 1) return "[" + lo + "-" + hi + "]";
  if (lo[0] == hi[0]) return std::string(1, lo[0]) + "(?:" + same_length(lo.substr(1), hi.substr(1)) + ")";
  std::string rest_lo = lo.substr(1), rest_hi = hi.substr(1);
  std::string zeros(n - 1, '0'), nines(n - 1, '9');
  std::string tail = "[0-9]{" + std::to_string(n - 1) + "}";
  std::vector<std::string> parts;
  char first_full = lo[0], last_full = hi[0];
  if (rest_lo != zeros) {
    parts.push_back(std::string(1, lo[0]) + "(?:" + same_length(rest_lo, nines) + ")");
    ++first_full;
  }
  bool hi_partial = rest_hi != nines;
  if (hi_partial) --last_full;
  if (first_full <= last_full) {
    parts.push_back("[" + std::string(1, first_full) + "-" + std::string(1, last_full) + "]" + tail);
  }
  if (hi_partial) parts.push_back(std::string(1, hi[0]) + "(?:" + same_length(zeros, rest_hi) + ")");
  std::string out;
  for (auto& p : parts) out += (out.empty() ? "" : "|") + p;
  return out;
}

ExactInt pow10(size_t n) {
  ExactInt v = 1;
  while (n--) v *= 10;
  return v;
}

std::string to_text(ExactInt v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  std::string out;
  while (v != 0) {
    int d = int(v % 10);
    out.push_back(char('0' + (d < 0 ? -d : d)));
    v /= 10;
  }
  if (neg) out.push_back('-');
  return std::string(out.rbegin(), out.rend());
}

// Non-negative integers in [a, b]; b < 0 = unbounded. Returns "" for an empty range.
std::string magnitude_range(ExactInt a, ExactInt b) {
  if (b >= 0 && a > b) return "";
  std::vector<std::string> parts;
  std::string sa = to_text(a);
  size_t la = sa.size();
  size_t lb = b >= 0 ? to_text(b).size() : la;
  for (size_t len = la; len <= lb; ++len) {
    ExactInt lo = len == 1 ? 0 : pow10(len - 1);
    if (len == la) lo = a;
    ExactInt hi = pow10(len) - 1;
    if (b >= 0 && len == lb) hi = b;
    if (lo > hi) continue;
    parts.push_back(same_length(to_text(lo), to_text(hi)));
  }
  if (b < 0) parts.push_back("[1-9][0-9]{" + std::to_string(la) + ",}");
  std::string out;
  for (auto& p : parts) out += (out.empty() ? "" : "|") + p;
  return out;
}

// Exponent digit strings (1 to 3 digits, leading zeros allowed as JSON does) of value <= n.
std::string exponent_at_most(int n) {
  std::vector<std::string> parts;
  for (size_t len = 1; len <= 3; ++len) {
    int hi = std::min<int>(n, int(pow10(len)) - 1);
    std::string h = std::to_string(hi);
    parts.push_back(same_length(std::string(len, '0'), std::string(len - h.size(), '0') + h));
  }
  std::string out;
  for (auto& p : parts) out += (out.empty() ? "" : "|") + p;
  return "(?:" + out + ")";
}

std::string join_alternatives(const std::vector<std::string>& parts) {
  if (parts.empty()) return "";  // empty language
  std::string out = "^(?:";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "|" : "") + std::string("(?:") + parts[i] + ")";
  return out + ")$";
}

bool integral(double v) { return std::isfinite(v) && std::floor(v) == v; }

}  // namespace

std::string integer_regex(const NumberBounds& b) {
  // Inclusive integer bounds; nullopt = open. Integers have at most 20 digits (the cap), so a
  // bound at or beyond 10^20 in magnitude is open on its far side and empty on its near side.
  const ExactInt cap = pow10(20);
  std::optional<ExactInt> lo, hi;
  if (b.lower) {
    ExactInt v;
    if (b.lower_exact) {
      v = *b.lower_exact;
    } else if (std::fabs(*b.lower) < 1e20) {
      double c = std::ceil(*b.lower);
      v = ExactInt(c);
      if (b.lower_exclusive && c != *b.lower) v -= 1;  // ceil already stepped past the bound
    } else {
      v = *b.lower > 0 ? cap : -cap;
    }
    if (b.lower_exclusive) v += 1;
    if (v >= cap) fail("minimum ", *b.lower, " is too large (integers have at most 20 digits)");
    if (v > -cap) lo = v;
  }
  if (b.upper) {
    ExactInt v;
    if (b.upper_exact) {
      v = *b.upper_exact;
    } else if (std::fabs(*b.upper) < 1e20) {
      double f = std::floor(*b.upper);
      v = ExactInt(f);
      if (b.upper_exclusive && f != *b.upper) v += 1;
    } else {
      v = *b.upper > 0 ? cap : -cap;
    }
    if (b.upper_exclusive) v -= 1;
    if (v <= -cap) fail("maximum ", *b.upper, " is too small (integers have at most 20 digits)");
    if (v < cap) hi = v;
  }
  std::vector<std::string> parts;
  // Non-negative part: [max(lo,0), hi].
  if (!hi || *hi >= 0) {
    std::string m = magnitude_range(lo ? std::max<ExactInt>(*lo, 0) : 0, hi ? *hi : -1);
    if (!m.empty()) parts.push_back(m);
  }
  // Negative part: magnitudes [max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    ExactInt mlo = hi ? std::max<ExactInt>(1, -*hi) : 1;
    std::string m = magnitude_range(mlo, lo ? -*lo : -1);
    if (!m.empty()) parts.push_back("-(?:" + m + ")");
  }
  return join_alternatives(parts);
}

std::string finite_number_cap() {
  // |x| < 10^(n + e) for n integer digits (leading digit nonzero) and exponent e: n + e <= 308
  // keeps it below 1e308 < DBL_MAX. A nonzero mantissa is at least 10^-20, so a negative
  // exponent down to -287 keeps it at or above 1e-307, a normal double (no underflow to 0).
  const std::string frac = "(?:\\.[0-9]{1,20})?", neg_exp = "-" + exponent_at_most(287);
  std::vector<std::string> parts;
  parts.push_back("0" + frac + "(?:[eE](?:\\+?" + exponent_at_most(308) + "|" + neg_exp + "))?");
  for (int n = 1; n <= 20; ++n) {
    std::string digits = n == 1 ? "[1-9]" : "[1-9][0-9]{" + std::to_string(n - 1) + "}";
    parts.push_back(digits + frac + "(?:[eE](?:\\+?" + exponent_at_most(308 - n) + "|" + neg_exp + "))?");
  }
  std::string out;
  for (auto& p : parts) out += (out.empty() ? "" : "|") + p;
  return "^-?(?:" + out + ")$";
}

std::string signed_number_regex(bool positive, bool or_zero) {
  const std::string exp = "(?:[eE][+-]?[0-9]+)?";
  std::string nonzero = "(?:[1-9][0-9]*(?:\\.[0-9]+)?|0\\.[0-9]*[1-9][0-9]*)" + exp;
  std::string zero = "0(?:\\.0+)?" + exp;
  std::string body = or_zero ? "(?:" + nonzero + "|" + zero + ")" : nonzero;
  // Zero is generated unsigned only (one spelling); -0 would be the same value.
  if (positive) return "^" + body + "$";
  return or_zero ? "^(?:-" + nonzero + "|" + zero + ")$" : "^-" + nonzero + "$";
}

std::string number_regex(const NumberBounds& b) {
  if (b.lower && !integral(*b.lower)) fail("non-integer minimum ", *b.lower, " on a number is not supported");
  if (b.upper && !integral(*b.upper)) fail("non-integer maximum ", *b.upper, " on a number is not supported");
  if (b.lower && std::fabs(*b.lower) >= double(kLimit)) fail("minimum ", *b.lower, " is too large");
  if (b.upper && std::fabs(*b.upper) >= double(kLimit)) fail("maximum ", *b.upper, " is too large");
  const std::string any_frac = "(?:\\.[0-9]+)?", zero_frac = "(?:\\.0+)?", nonzero_frac = "\\.[0-9]*[1-9][0-9]*";
  // Magnitudes m = I.F with A <(=) m <(=) B (B < 0: unbounded), as alternatives.
  auto magnitude = [&](int64_t A, bool a_incl, int64_t B, bool b_incl) {
    std::vector<std::string> parts;
    int64_t any_lo = a_incl ? A : A + 1;
    int64_t any_hi = B < 0 ? -1 : B - 1;
    if (B < 0 || any_lo <= any_hi) {
      std::string r = magnitude_range(any_lo, any_hi);
      if (!r.empty()) parts.push_back("(?:" + r + ")" + any_frac);
    }
    if (!a_incl && (B < 0 || A < B)) parts.push_back(std::to_string(A) + nonzero_frac);
    if (B >= 0 && b_incl && (B > A || (B == A && a_incl))) parts.push_back(std::to_string(B) + zero_frac);
    return parts;
  };
  std::vector<std::string> parts;
  // x >= 0 (including 0): A = max(lower, 0), B = upper.
  bool has_nonneg = !b.upper || *b.upper > 0 || (*b.upper == 0 && !b.upper_exclusive);
  if (has_nonneg) {
    int64_t A = 0;
    bool a_incl = true;
    if (b.lower && *b.lower >= 0) A = int64_t(*b.lower), a_incl = !b.lower_exclusive;
    int64_t B = b.upper ? int64_t(*b.upper) : -1;
    auto p = magnitude(A, a_incl, B, !b.upper_exclusive);
    parts.insert(parts.end(), p.begin(), p.end());
  }
  // x < 0: magnitude m = -x in (max(0,-upper) , -lower].
  bool has_neg = !b.lower || *b.lower < 0;
  if (has_neg) {
    int64_t A = 0;
    bool a_incl = false;  // m > 0 (x = -0 is generated by the non-negative part as 0)
    if (b.upper && *b.upper < 0) A = int64_t(-*b.upper), a_incl = !b.upper_exclusive;
    int64_t B = b.lower ? int64_t(-*b.lower) : -1;
    for (auto& p : magnitude(A, a_incl, B, !b.lower_exclusive)) {
      // a_incl == false with A == 0 would allow "0.5": correct (x = -0.5), and I == 0 with
      // nonzero fraction is exactly what the !a_incl branch generates.
      parts.push_back("-" + p);
    }
  }
  return join_alternatives(parts);
}

namespace {

// A non-negative decimal as integer digits and fraction digits (no trailing zeros).
struct Decimal {
  std::string integer, fraction;
};

Decimal to_decimal(double v) {
  // The shortest fixed-point spelling of any finite double fits (1.8e308: 309 digits; the
  // smallest subnormal: "0." and 324 digits); 64 bytes did not, and 1e-300 read garbage.
  char buf[400];
  auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::fixed);
  if (res.ec != std::errc{}) fail("bound ", v, " cannot be written as a decimal");
  std::string s(buf, res.ptr);
  Decimal d;
  auto dot = s.find('.');
  d.integer = s.substr(0, dot);
  if (dot != std::string::npos) d.fraction = s.substr(dot + 1);
  while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.pop_back();
  if (d.integer.size() > 18) fail("bound ", v, " is too large");
  // The bound's regex grows with the square of its decimal places; a clear refusal beats a
  // regex-size error that does not say which number caused it.
  if (d.fraction.size() > 64) fail("bound ", v, " has ", d.fraction.size(), " decimal places; at most 64 are supported");
  return d;
}

std::string digit_class(char lo, char hi) { return "[" + std::string(1, lo) + "-" + std::string(1, hi) + "]"; }

// Optional-fraction regexes relative to fraction digits f (no trailing zeros).
std::string frac_ge(const std::string& f, bool strict) {
  std::vector<std::string> alts;
  for (size_t j = 0; j < f.size(); ++j)
    if (f[j] < '9') alts.push_back("\\." + f.substr(0, j) + digit_class(char(f[j] + 1), '9') + "[0-9]*");
  alts.push_back(strict ? "\\." + f + "[0-9]*[1-9][0-9]*" : (f.empty() ? "(?:\\.[0-9]+)?" : "\\." + f + "[0-9]*"));
  std::string out;
  for (auto& a : alts) out += (out.empty() ? "" : "|") + a;
  return "(?:" + out + ")";
}

std::string frac_le(const std::string& f, bool strict) {
  if (f.empty()) return strict ? "" : "(?:\\.0+)?";
  std::vector<std::string> alts{""};  // no fraction: 0 < f
  for (size_t j = 0; j < f.size(); ++j) {
    if (f[j] > '0') alts.push_back("\\." + f.substr(0, j) + digit_class('0', char(f[j] - 1)) + "[0-9]*");
    if (j + 1 < f.size() || !strict) alts.push_back("\\." + f.substr(0, j + 1) + "0*");
  }
  std::string out;
  for (size_t k = 0; k < alts.size(); ++k) out += (k ? "|" : "") + alts[k];
  return "(?:" + out + ")";
}

CpDfa regex_dfa(const std::string& re) {
  if (re.empty()) return CpDfa{{CpDfa::State{}}};  // the empty language
  return compile_regex("^(?:" + re + ")$", false);
}

const std::string kAnyFrac = "(?:\\.[0-9]+)?";

// Magnitudes m >= a (strict: m > a), written I(.F)?.
CpDfa magnitude_ge(const Decimal& a, bool strict) {
  int64_t ai = std::stoll(a.integer);
  std::string re = "(?:" + magnitude_range(ai + 1, -1) + ")" + kAnyFrac;
  re += "|" + a.integer + frac_ge(a.fraction, strict);
  return regex_dfa(re);
}

// Magnitudes m <= b (strict: m < b).
CpDfa magnitude_le(const Decimal& b, bool strict) {
  int64_t bi = std::stoll(b.integer);
  std::vector<std::string> alts;
  if (bi > 0) alts.push_back("(?:" + magnitude_range(0, bi - 1) + ")" + kAnyFrac);
  std::string tail = frac_le(b.fraction, strict);
  if (!tail.empty()) alts.push_back(b.integer + tail);
  std::string re;
  for (auto& x : alts) re += (re.empty() ? "" : "|") + x;
  return regex_dfa(re);
}

CpDfa prefixed(const std::string& prefix, const CpDfa& d) {
  if (d.is_empty_language()) return CpDfa{};
  // Prepend literal code points by shifting states.
  CpDfa out;
  out.states.resize(prefix.size() + d.states.size());
  for (size_t i = 0; i < prefix.size(); ++i) {
    out.states[i].edges.push_back({uint32_t(uint8_t(prefix[i])), uint32_t(uint8_t(prefix[i])), int(i + 1)});
  }
  for (size_t i = 0; i < d.states.size(); ++i) {
    auto& st = out.states[prefix.size() + i];
    st.accept = d.states[i].accept;
    for (auto e : d.states[i].edges) {
      e.to += int(prefix.size());
      st.edges.push_back(e);
    }
  }
  return out;
}

}  // namespace

CpDfa number_dfa(const NumberBounds& b) {
  CpDfa result;
  // x >= 0: magnitude in [max(lower,0), upper].
  bool has_nonneg = !b.upper || *b.upper > 0 || (*b.upper == 0 && !b.upper_exclusive);
  if (has_nonneg) {
    CpDfa m = dfa_universal();
    m = regex_dfa("(?:0|[1-9][0-9]*)" + kAnyFrac);
    if (b.lower && *b.lower >= 0) m = dfa_intersect(m, magnitude_ge(to_decimal(*b.lower), b.lower_exclusive));
    if (b.upper) m = dfa_intersect(m, magnitude_le(to_decimal(*b.upper), b.upper_exclusive));
    result = m;
  }
  // x < 0: magnitude m = -x in [max(0, -upper), -lower].
  bool has_neg = !b.lower || *b.lower < 0;
  if (has_neg) {
    CpDfa m = regex_dfa("(?:0|[1-9][0-9]*)" + kAnyFrac);
    if (b.upper && *b.upper < 0) m = dfa_intersect(m, magnitude_ge(to_decimal(*b.upper), b.upper_exclusive));
    if (b.lower) m = dfa_intersect(m, magnitude_le(to_decimal(*b.lower), b.lower_exclusive));
    CpDfa neg = prefixed("-", m);
    result = result.states.empty() ? neg : (neg.states.empty() ? result : dfa_union(result, neg));
  }
  result.prune_dead();
  return result;
}

std::optional<DecimalMultiple> decimal_multiple(double m) {
  if (!(m > 0) || !std::isfinite(m)) return std::nullopt;
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, m);  // shortest round-trip form
  std::string t(buf, res.ptr);
  int exp = 0;
  if (auto e = t.find_first_of("eE"); e != std::string::npos) {
    exp = std::stoi(t.substr(e + 1));
    t = t.substr(0, e);
  }
  std::string digits;
  int frac = 0;
  bool after_point = false;
  for (char c : t) {
    if (c == '.') {
      after_point = true;
    } else {
      digits += c;
      if (after_point) ++frac;
    }
  }
  int f = frac - exp;
  while (f < 0) digits += '0', ++f;
  size_t nz = digits.find_first_not_of('0');
  if (nz == std::string::npos) return std::nullopt;
  digits = digits.substr(nz);
  while (f > 0 && digits.size() > 1 && digits.back() == '0') digits.pop_back(), --f;
  if (digits.size() > 15 || f > 20) return std::nullopt;
  return DecimalMultiple{std::stoll(digits), f};
}

std::optional<DecimalMultiple> lcm_multiple(DecimalMultiple x, DecimalMultiple y) {
  int f = std::max(x.f, y.f);
  __int128 nx = x.a, ny = y.a;
  for (int i = x.f; i < f; ++i) nx *= 10;
  for (int i = y.f; i < f; ++i) ny *= 10;
  __int128 g = nx, h = ny;
  while (h != 0) {
    __int128 r = g % h;
    g = h;
    h = r;
  }
  __int128 l = nx / g * ny;
  while (f > 0 && l % 10 == 0) l /= 10, --f;
  if (l > __int128(1'000'000'000'000'000)) return std::nullopt;
  return DecimalMultiple{int64_t(l), f};
}

CpDfa multiple_dfa(DecimalMultiple m) {
  const int64_t a = m.a;
  const int f = m.f;
  if (a < 1 || f < 0) fail("multipleOf automaton: bad multiple");
  // pow10[i] = 10^i mod a.
  std::vector<int64_t> pow10(size_t(f) + 1, 1 % a);
  for (int i = 1; i <= f; ++i) pow10[size_t(i)] = pow10[size_t(i) - 1] * 10 % a;
  // States: 0 start, 1 after '-', 2 integer part "0", then I[q] (integer digits, remainder q
  // of their value), F[i][q] (i < f fraction digits read, remainder of the digits so far), and
  // T[q] (f or more fraction digits read, at least one; only zeros may follow).
  const size_t A = size_t(a), nF = size_t(std::max(f, 1));
  auto I = [&](int64_t q) { return int(3 + size_t(q)); };
  auto F = [&](int i, int64_t q) { return int(3 + A + size_t(i) * A + size_t(q)); };
  auto T = [&](int64_t q) { return int(3 + A + nF * A + size_t(q)); };
  CpDfa d;
  d.states.resize(3 + A * (nF + 2));
  auto edge = [&](int from, uint32_t lo, uint32_t hi, int to) { d.states[size_t(from)].edges.push_back({lo, hi, to}); };
  auto digits_from = [&](int from, int64_t q, bool integer_part, int i) {
    // digit d from remainder q -> (10q + d) mod a, to the state for the next position.
    for (uint32_t dg = '0'; dg <= '9'; ++dg) {
      int64_t r = (q * 10 + int64_t(dg - '0')) % a;
      int to = integer_part ? I(r) : (i + 1 < f ? F(i + 1, r) : T(r));
      edge(from, dg, dg, to);
    }
  };
  auto accept_int = [&](int64_t q) { return q * pow10[size_t(f)] % a == 0; };
  // start / sign
  for (int s : {0, 1}) {
    if (s == 0) edge(0, '-', '-', 1);
    edge(s, '0', '0', 2);
    for (uint32_t dg = '1'; dg <= '9'; ++dg) edge(s, dg, dg, I(int64_t(dg - '0') % a));
    std::sort(d.states[size_t(s)].edges.begin(), d.states[size_t(s)].edges.end(),
              [](const CpDfa::Edge& x, const CpDfa::Edge& y) { return x.lo < y.lo; });
  }
  d.states[2].accept = true;
  edge(2, '.', '.', F(0, 0));
  for (int64_t q = 0; q < a; ++q) {
    int s = I(q);
    edge(s, '.', '.', F(0, q));
    digits_from(s, q, true, 0);
    d.states[size_t(s)].accept = accept_int(q);
    for (int i = 0; i < f; ++i) {
      digits_from(F(i, q), q, false, i);
      // i >= 1 fraction digits read: the value times 10^f is q * 10^(f - i).
      d.states[size_t(F(i, q))].accept = i >= 1 && q * pow10[size_t(f - i)] % a == 0;
    }
    edge(T(q), '0', '0', T(q));
    d.states[size_t(T(q))].accept = q == 0;
  }
  if (f == 0) {
    // With no fraction digits allowed, '.' must be followed by zeros only: F(0, q) is T(q)'s
    // entry, which needs one digit (a zero) before it accepts.
    for (int64_t q = 0; q < a; ++q) edge(F(0, q), '0', '0', T(q));
  }
  d.prune_dead();
  return d;
}

}  // namespace ringlm::guided
