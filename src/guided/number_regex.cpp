#include "guided/number_regex.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "util/error.h"

namespace ringlm::guided {
namespace {

constexpr int64_t kLimit = 1'000'000'000'000'000'000;  // 1e18: larger bounds are treated as open

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

int64_t pow10(size_t n) {
  int64_t v = 1;
  while (n--) v *= 10;
  return v;
}

// Non-negative integers in [a, b]; b < 0 = unbounded. Returns "" for an empty range.
std::string magnitude_range(int64_t a, int64_t b) {
  if (b >= 0 && a > b) return "";
  std::vector<std::string> parts;
  std::string sa = std::to_string(a);
  size_t la = sa.size();
  size_t lb = b >= 0 ? std::to_string(b).size() : la;
  for (size_t len = la; len <= lb; ++len) {
    int64_t lo = len == 1 ? 0 : pow10(len - 1);
    if (len == la) lo = a;
    int64_t hi = pow10(len) - 1;
    if (b >= 0 && len == lb) hi = b;
    if (lo > hi) continue;
    parts.push_back(same_length(std::to_string(lo), std::to_string(hi)));
  }
  if (b < 0) parts.push_back("[1-9][0-9]{" + std::to_string(la) + ",}");
  std::string out;
  for (auto& p : parts) out += (out.empty() ? "" : "|") + p;
  return out;
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
  // Inclusive integer bounds; nullopt = open.
  std::optional<int64_t> lo, hi;
  if (b.lower && std::fabs(*b.lower) < double(kLimit)) {
    double v = std::ceil(*b.lower);
    if (b.lower_exclusive && v == *b.lower) v += 1;
    lo = int64_t(v);
  } else if (b.lower && *b.lower > 0) {
    fail("minimum ", *b.lower, " is too large");
  }
  if (b.upper && std::fabs(*b.upper) < double(kLimit)) {
    double v = std::floor(*b.upper);
    if (b.upper_exclusive && v == *b.upper) v -= 1;
    hi = int64_t(v);
  } else if (b.upper && *b.upper < 0) {
    fail("maximum ", *b.upper, " is too small");
  }
  std::vector<std::string> parts;
  // Non-negative part: [max(lo,0), hi].
  if (!hi || *hi >= 0) {
    std::string m = magnitude_range(lo ? std::max<int64_t>(*lo, 0) : 0, hi ? *hi : -1);
    if (!m.empty()) parts.push_back(m);
  }
  // Negative part: magnitudes [max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    int64_t mlo = hi ? std::max<int64_t>(1, -*hi) : 1;
    std::string m = magnitude_range(mlo, lo ? -*lo : -1);
    if (!m.empty()) parts.push_back("-(?:" + m + ")");
  }
  return join_alternatives(parts);
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

}  // namespace ringlm::guided
