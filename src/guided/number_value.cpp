#include "guided/number_value.h"

#include <charconv>
#include <cmath>
#include <system_error>

#include "util/error.h"

namespace ringlm::guided {
namespace {

// A decimal text (`-12.50e+3`, `1e+23`, `0.001`) as a DecimalValue.
DecimalValue parse_decimal(std::string_view t) {
  DecimalValue v;
  size_t i = 0;
  if (i < t.size() && t[i] == '-') v.negative = true, ++i;
  std::string digits;
  int64_t exponent = 0;
  bool point = false;
  for (; i < t.size() && t[i] != 'e' && t[i] != 'E'; ++i) {
    if (t[i] == '.') {
      point = true;
    } else {
      digits.push_back(t[i]);
      if (point) --exponent;
    }
  }
  if (i < t.size()) {
    int64_t e = 0;
    size_t at = i + 1 + (i + 1 < t.size() && t[i + 1] == '+');
    auto r = std::from_chars(t.data() + at, t.data() + t.size(), e);
    if (r.ec != std::errc()) fail("number value: bad exponent in '", std::string(t), "'");
    exponent += e;
  }
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return DecimalValue{};  // zero, either sign
  size_t last = digits.find_last_not_of('0');
  exponent += int64_t(digits.size() - 1 - last);
  v.digits = digits.substr(first, last + 1 - first);
  v.exponent = exponent;
  return v;
}

// The decimal with the fewest significant digits that reads back as d (to_chars in scientific
// form: without a format it may print a large integer's every digit, 2^60 as
// 1152921504606846976 rather than 1.152921504606847e+18).
DecimalValue shortest(double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  return parse_decimal(std::string_view(buf, size_t(r.ptr - buf)));
}

}  // namespace

DecimalValue decimal_value(const Json& n) {
  if (n.is_number_unsigned()) return parse_decimal(std::to_string(n.get<uint64_t>()));
  if (n.is_number_integer()) return parse_decimal(std::to_string(n.get<int64_t>()));
  if (n.is_number_float()) return shortest(n.get<double>());
  fail("number value: not a number");
}

bool doubles_equal(const DecimalValue& v) {
  if (v.digits.empty()) return true;
  std::string text = (v.negative ? "-" : "") + v.digits + "e" + std::to_string(v.exponent);
  double d = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), d);
  if (r.ec != std::errc() || !std::isfinite(d)) return false;  // out of the double range
  return shortest(d) == v;
}

std::string integer_text(const DecimalValue& v) {
  if (v.digits.empty()) return "0";
  if (v.exponent < 0 || v.exponent > 400) return "";
  return (v.negative ? "-" : "") + v.digits + std::string(size_t(v.exponent), '0');
}

bool integer_literal_in_range(const DecimalValue& v) {
  if (v.digits.empty()) return true;
  if (v.exponent < 0 || int64_t(v.digits.size()) + v.exponent > 20) return false;
  const std::string text = v.digits + std::string(size_t(v.exponent), '0');
  const std::string bound = v.negative ? "9223372036854775808" : "18446744073709551615";
  return text.size() < bound.size() || (text.size() == bound.size() && text <= bound);
}

bool json_numbers_equal(const Json& a, const Json& b) {
  if (a.is_number_float() && b.is_number_float()) return a.get<double>() == b.get<double>();
  if (a.is_number_float() || b.is_number_float()) return decimal_value(a) == decimal_value(b);
  if (a.is_number_unsigned() && b.is_number_unsigned()) return a.get<uint64_t>() == b.get<uint64_t>();
  if (a.is_number_unsigned() || b.is_number_unsigned()) {
    const Json& u = a.is_number_unsigned() ? a : b;
    const Json& s = a.is_number_unsigned() ? b : a;
    return s.get<int64_t>() >= 0 && uint64_t(s.get<int64_t>()) == u.get<uint64_t>();
  }
  return a.get<int64_t>() == b.get<int64_t>();
}

}  // namespace ringlm::guided
