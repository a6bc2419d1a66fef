// Regular expressions (regex.h subset) for JSON numbers within bounds. Bounded numbers are
// generated without exponent notation (a documented restriction); bounds must be integers for
// `number` (any bound works for `integer`: it is rounded inward).
#pragma once

#include <optional>
#include <string>

#include "guided/regex.h"

namespace ringlm::guided {

// A bound's exact value when the schema wrote it as a JSON integer (int64 / uint64 keep every
// digit; a double past 2^53 does not), so integer bounds near 2^63 are enforced digit for digit.
using ExactInt = __int128;

struct NumberBounds {
  std::optional<double> lower, upper;
  std::optional<ExactInt> lower_exact, upper_exact;  // set when the bound is a JSON integer
  bool lower_exclusive = false, upper_exclusive = false;
};

// Anchored regex of the JSON integers in the bounds ("^...$"); "" when no integer fits. Exact
// for every bound (integers compared as 128-bit values); a bound of 10^20 or more in magnitude
// lies beyond the 20-digit cap and leaves that side open (or fails: "minimum ... too large").
std::string integer_regex(const NumberBounds& b);

// Anchored regex of the finite JSON numbers a double holds: at most 20 integer and 20 fraction
// digits, and an exponent that keeps the value in [1e-307, 1e308) (so no `1e999`, which
// parsers turn into inf or reject). Every generated number is intersected with it.
std::string finite_number_cap();

// Anchored regex of the numbers, exponent notation included, that are > 0 (positive) or < 0,
// (negative), or >= 0 / <= 0 with `or_zero`; for bounds that are 0, where the sign decides.
std::string signed_number_regex(bool positive, bool or_zero);

// Anchored regex of the JSON numbers (no exponent) in the bounds; Error when a bound is not an
// integer value. "" when no number fits.
std::string number_regex(const NumberBounds& b);

// The JSON numbers (no exponent) in the bounds, for any finite decimal bounds (non-integral
// ones included); the empty automaton when no number fits.
CpDfa number_dfa(const NumberBounds& b);

// A positive `multipleOf` value as written, a / 10^f exactly (a > 0 an integer, f >= 0 fraction
// digits, a not divisible by 10 when f > 0): 0.01 -> (1, 2), 0.25 -> (25, 2), 12 -> (12, 0),
// 1e-05 -> (1, 5). Read from the shortest decimal that round-trips the double (what the schema
// wrote for any value with up to 15 significant digits). nullopt when a > 10^15 or f > 20.
struct DecimalMultiple {
  int64_t a = 1;
  int f = 0;
};
std::optional<DecimalMultiple> decimal_multiple(double m);
// The least common multiple of two such values (nullopt past the same limits).
std::optional<DecimalMultiple> lcm_multiple(DecimalMultiple x, DecimalMultiple y);

// The JSON numbers without exponent notation that are exact multiples of a / 10^f: x * 10^f is
// an integer divisible by a, i.e. fraction digits past the f-th are zeros and the digits read
// as an integer (fraction padded to f digits) are 0 mod a. A remainder automaton of about
// a * (f + 2) states; the caller bounds a and f.
CpDfa multiple_dfa(DecimalMultiple m);

}  // namespace ringlm::guided
