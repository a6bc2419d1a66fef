// The value of a JSON number as the validator and the grammar compare it. The parser keeps an
// integer literal within int64 / uint64 exactly and reads every other number text as the
// nearest double, so those are the two kinds of value a Json holds. Each stands for one exact
// decimal: an integer for itself, a double for the shortest decimal that reads back as it
// (what a schema wrote for any literal of up to 15 significant digits: 2.0 -> 2, 0.1 -> 0.1,
// 1e23 -> 10^23 although the double is 99999999999999991611392). Two numbers are equal when
// those decimals are: `2`, `2.0`, `20e-1` and `0.2e1` are one value, 9007199254740993 (an
// int64) and 9007199254740993.0 (read as the double 2^53) are not. (docs/guided.md, "Numbers
// by value".)
#pragma once

#include <cstdint>
#include <string>

#include "guided/json.h"

namespace ringlm::guided {

// value = (-1)^negative * digits * 10^exponent; digits has no leading or trailing zeros, and
// is empty for zero (then negative is false and exponent 0: -0 and 0 are one value).
struct DecimalValue {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;
  bool operator==(const DecimalValue&) const = default;
};

// The decimal a Json number stands for (above). Error for a non-number.
DecimalValue decimal_value(const Json& number);

// Whether a text with a fraction or an exponent (which the parser reads as a double) can equal
// `v`: true when the double nearest to v reads back as v itself. False for an integer a double
// does not hold (2^53 + 1: only its integer literal equals it) and for one whose double's
// shortest decimal differs (2^60: 1152921504606846976 reads back as 1152921504606847000).
bool doubles_equal(const DecimalValue& v);

// The decimal as a JSON text in plain notation when it is an integer (`-12`, `0`), else "".
std::string integer_text(const DecimalValue& v);

// Whether v's integer literal reads as an integer (v is one, within [-2^63, 2^64 - 1]); draft 4
// counts only those texts as integers, every other spelling reads as a double.
bool integer_literal_in_range(const DecimalValue& v);

// JSON numbers compared by the values above.
bool json_numbers_equal(const Json& a, const Json& b);

}  // namespace ringlm::guided
