// Regular expressions (regex.h subset) for JSON numbers within bounds. Bounded numbers are
// generated without exponent notation (a documented restriction); bounds must be integers for
// `number` (any bound works for `integer`: it is rounded inward).
#pragma once

#include <optional>
#include <string>

namespace ringlm::guided {

struct NumberBounds {
  std::optional<double> lower, upper;
  bool lower_exclusive = false, upper_exclusive = false;
};

// Anchored regex of the JSON integers in the bounds ("^...$"); "" when no integer fits.
std::string integer_regex(const NumberBounds& b);

// Anchored regex of the JSON numbers (no exponent) in the bounds; Error when a bound is not an
// integer value. "" when no number fits.
std::string number_regex(const NumberBounds& b);

}  // namespace ringlm::guided
