// The emission pass for literal values (enum / const, the values of a unique array): every
// value as its one serialisation, except numbers, which are matched by value: `2` also as
// `2.0`, `2.00`, `20e-1`, `0.2e1`, `2E0` (number_value.h says which texts equal which value).
#include <cmath>
#include <mutex>
#include <unordered_map>

#include "guided/number_value.h"
#include "guided/schema_passes.h"

namespace ringlm::guided::schema {
namespace {

bool holds_number(const Json& v) {
  if (v.is_number()) return true;
  if (v.is_array() || v.is_object())
    for (auto& x : v)
      if (holds_number(x)) return true;
  return false;
}

// Exponents the number grammar's cap allows after a mantissa with n integer digits (n = 0 for
// an integer part `0`): the value stays within [1e-307, 1e308) (finite_number_cap).
bool exponent_in_cap(int64_t n, int64_t e) { return e >= -287 && e <= 308 - n; }

// v as the Json kind its integer literal reads as (int64 / uint64), and as the double its other
// texts read as.
Json as_integer(const DecimalValue& v) { return Json::parse(integer_text(v)); }
Json as_double(const DecimalValue& v) {
  return Json::parse((v.negative ? "-" : "") + (v.digits.empty() ? "0" : v.digits) + "e" + std::to_string(v.exponent));
}

// Numbers nested in v whose integer literal and other texts are both its value.
void two_kind_numbers(const Json& v, const std::string& at, std::vector<std::string>& out) {
  if (v.is_number()) {
    DecimalValue d = decimal_value(v);
    if (integer_literal_in_range(d) && doubles_equal(d)) out.push_back(at);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) two_kind_numbers(v[i], at + "/" + std::to_string(i), out);
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      std::string key = it.key();  // JSON pointer escapes: ~ -> ~0, / -> ~1
      for (size_t p = 0; (p = key.find_first_of("~/", p)) != std::string::npos; p += 2)
        key.replace(p, 1, key[p] == '~' ? "~0" : "~1");
      two_kind_numbers(it.value(), at + "/" + key, out);
    }
  }
}

}  // namespace

void Emitter::enum_value(const Json& v, const std::function<bool(const Json&)>& passes, uint32_t from, uint32_t to) {
  if (v.is_number()) {
    // A number's integer literal reads as an int, its other texts as a double: the two kinds
    // are checked apart (draft 4's `integer` takes only the first).
    const DecimalValue d = decimal_value(v);
    const bool integer_ok = integer_literal_in_range(d) && passes(as_integer(d));
    const bool other_ok = doubles_equal(d) && passes(as_double(d));
    if (integer_ok || other_ok) b_.call(from, number_value_rule(v, integer_ok, other_ok), to);
    return;
  }
  std::vector<std::string> two_kinds;
  two_kind_numbers(v, "", two_kinds);
  bool kinds_matter = cx_.draft4;
  for (auto& p : two_kinds) kinds_matter = kinds_matter || std::fabs(v.at(Json::json_pointer(p)).get<double>()) >= 0x1p53;
  if (two_kinds.empty() || !kinds_matter || two_kinds.size() > 4) {
    // The nested numbers' kinds do not change validity, or (past 4 of them) only the kinds
    // written are generated (literal_value).
    if (!passes(v)) return;
    note_keys(v);
    literal_value(v, from, to);
    return;
  }
  // Each choice of kinds for the nested numbers, as its own alternative.
  for (uint32_t mask = 0; mask < (1u << two_kinds.size()); ++mask) {
    Json w = v;
    for (size_t i = 0; i < two_kinds.size(); ++i) {
      Json& x = w.at(Json::json_pointer(two_kinds[i]));
      const DecimalValue d = decimal_value(x);
      x = (mask >> i) & 1 ? as_integer(d) : as_double(d);
    }
    if (!passes(w)) continue;
    note_keys(w);
    literal_value(w, from, to);
  }
}

std::string Emitter::value_key(const Json& v) {
  if (v.is_number()) {
    DecimalValue d = decimal_value(v);
    return std::string("#") + (d.negative ? "-" : "") + d.digits + "e" + std::to_string(d.exponent);
  }
  if (!holds_number(v)) return serialize_json(v, Whitespace::kCompact);
  std::string out(1, v.is_array() ? '[' : '{');
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (v.is_object()) out += Json(it.key()).dump() + ":";
    out += value_key(it.value()) + ",";
  }
  return out + (v.is_array() ? "]" : "}");
}

void Emitter::literal_value(const Json& v, uint32_t from, uint32_t to) {
  if (v.is_number()) {
    // Its integer literal and its other spellings read as different Json kinds (int / double),
    // which draft 4's `integer` and the exact comparisons of integers past 2^53 tell apart; the
    // value was checked as written, so there only texts of the kind written are generated.
    const bool either = !cx_.draft4 && std::fabs(v.get<double>()) < 9007199254740992.0;
    b_.call(from, number_value_rule(v, either || v.is_number_integer(), either || v.is_number_float()), to);
    return;
  }
  const Whitespace ws = cx_.options.whitespace;
  if (!holds_number(v)) {
    b_.literal(from, to, serialize_json(v, ws));
    return;
  }
  // An array or object holding numbers: its serialisation, each number by value.
  uint32_t at = b_.new_state();
  b_.literal(from, at, v.is_array() ? "[" : "{");
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    std::string sep = first ? "" : sep_comma(ws);
    if (v.is_object()) sep += "\"" + json_escape(it.key()) + "\"" + sep_colon(ws);
    first = false;
    if (!sep.empty()) {
      uint32_t next = b_.new_state();
      b_.literal(at, next, sep);
      at = next;
    }
    uint32_t next = b_.new_state();
    literal_value(it.value(), at, next);
    at = next;
  }
  b_.literal(at, to, v.is_array() ? "]" : "}");
}

// `e` or `E`, the exponent's sign (`+` optional, `-` for zero too) and 1 to 3 digits of its
// magnitude, leading zeros allowed (as the number grammar's cap has them): e1, E+01, e-001.
uint32_t Emitter::exponent_rule(int64_t e) {
  const std::string key = "exponent:" + std::to_string(e);
  if (auto it = number_rules_.find(key); it != number_rules_.end()) return it->second;
  const std::string mag = std::to_string(e < 0 ? -e : e);
  const uint32_t r = b_.new_rule(), end = b_.new_state();
  b_.set_final(end);
  number_rules_[key] = r;
  // Built by hand: one regex per exponent was most of an enum's compile time.
  const uint32_t letter = b_.new_state(), sign = b_.new_state(), digits = b_.new_state();
  b_.bytes(b_.rule_start(r), letter, 'E', 'E');
  b_.bytes(b_.rule_start(r), letter, 'e', 'e');
  if (e >= 0) b_.eps(letter, sign);
  if (e >= 0) b_.bytes(letter, sign, '+', '+');
  if (e <= 0) b_.bytes(letter, sign, '-', '-');
  uint32_t at = sign;  // up to 3 - |mag| leading zeros, each optional
  b_.eps(at, digits);
  for (size_t k = mag.size(); k < 3; ++k) {
    uint32_t next = b_.new_state();
    b_.bytes(at, next, '0', '0');
    b_.eps(next, digits);
    at = next;
  }
  b_.literal(digits, end, mag);
  return r;
}

// The texts of one number's value (number_value.h) within the number grammar's caps: at most
// 20 integer digits, at most 20 fraction digits up to the last significant one (trailing
// zeros after it are not counted: counting them would cost a counter per exponent), and an
// exponent within finite_number_cap's range. `integer_texts`: the integer literal when it
// reads as an integer (and `-0`); `other_texts`: every other spelling, all read as one double
// (none when that double stands for another value: 2^53 + 1 has its integer literal only).
uint32_t Emitter::number_value_rule(const Json& number, bool integer_texts, bool other_texts) {
  const DecimalValue v = decimal_value(number);
  const bool in_range = integer_literal_in_range(v);
  integer_texts = integer_texts && in_range;
  other_texts = other_texts && doubles_equal(v);
  const std::string key =
      "value:" + value_key(number) + (integer_texts ? ":integer" : "") + (other_texts ? ":other" : "");
  if (auto it = number_rules_.find(key); it != number_rules_.end()) return it->second;
  const uint32_t r = b_.new_rule(), end = b_.new_state();
  b_.set_final(end);
  number_rules_[key] = r;
  const uint32_t start = b_.rule_start(r);
  if (!integer_texts && !other_texts) return r;  // no text: the rule cannot finish
  if (v.digits.empty()) {
    // Zero: `0`, `-0` (integer literals), `0.000`, `0e5`, `-0.0E-3`, ...
    const std::string x =
        "[eE](?:\\+?(?:[0-9]{1,2}|[0-2][0-9]{2}|30[0-8])|-(?:[0-9]{1,2}|[01][0-9]{2}|2[0-7][0-9]|28[0-7]))";
    const std::string re = !other_texts ? "^-?0$"
                           : integer_texts ? "^-?0(?:\\.0+)?(?:" + x + ")?$"
                                           : "^-?0(?:\\.0+(?:" + x + ")?|" + x + ")$";
    static std::unordered_map<std::string, CpDfa> zeros;  // three languages, built once
    static std::mutex zeros_mutex;
    std::lock_guard<std::mutex> lock(zeros_mutex);
    auto it = zeros.find(re);
    if (it == zeros.end()) it = zeros.emplace(re, compile_regex(re, false)).first;
    emit_ascii_dfa(it->second, start, end);
    return r;
  }
  uint32_t s = start;
  if (v.negative) {
    s = b_.new_state();
    b_.literal(start, s, "-");
  }
  if (!other_texts) {
    b_.literal(s, end, v.digits + std::string(size_t(v.exponent), '0'));
    return r;
  }
  // The plain integer literal is one of the other texts when it reads as a double.
  number_spellings(v, s, end, integer_texts || !in_range);
  return r;
}

// Zeros, then the exponent part that makes the mantissa worth the value: e (when the cap
// allows it after the mantissa's integer digits; nothing when e is 0). Shared by every value
// of the grammar that needs it.
uint32_t Emitter::frac_zeros_rule(int64_t e, bool in_cap) {
  const std::string key = "zeros-exponent:" + std::to_string(e) + (in_cap ? "" : ":out");
  if (auto it = number_rules_.find(key); it != number_rules_.end()) return it->second;
  const uint32_t r = b_.new_rule(), end = b_.new_state(), s = b_.rule_start(r);
  b_.set_final(end);
  number_rules_[key] = r;
  b_.bytes(s, s, '0', '0');
  if (e == 0) b_.eps(s, end);
  if (in_cap) b_.call(s, exponent_rule(e), end);
  return r;
}

// After k integer digits ending a value whose leading digit is at 10^(m - 1): more zeros (up
// to 20 digits), or the exponent m - k, or `.`, zeros and that exponent. `plain`: the text
// with no point and no exponent (the integer literal, when m == k) is one of them.
uint32_t Emitter::int_zeros_rule(int64_t m, int64_t k, bool plain) {
  const std::string key = "int-zeros:" + std::to_string(m) + ":" + std::to_string(k) + (plain ? "" : ":no-plain");
  if (auto it = number_rules_.find(key); it != number_rules_.end()) return it->second;
  const uint32_t r = b_.new_rule(), end = b_.new_state(), s = b_.rule_start(r);
  b_.set_final(end);
  number_rules_[key] = r;
  const int64_t e = m - k;
  const bool in_cap = exponent_in_cap(k, e);
  if (e == 0 && plain) b_.eps(s, end);
  if (in_cap) b_.call(s, exponent_rule(e), end);
  const uint32_t point = b_.new_state(), zero = b_.new_state();
  b_.literal(s, point, ".");
  b_.bytes(point, zero, '0', '0');
  b_.call(zero, frac_zeros_rule(e, in_cap), end);
  if (k < 20) {
    const uint32_t more = b_.new_state();
    b_.bytes(s, more, '0', '0');
    b_.call(more, int_zeros_rule(m, k + 1, plain), end);
  }
  return r;
}

// The unsigned texts of a nonzero value 0.G * 10^m (G = v.digits, L digits, m = Q + L): G's
// first p digits, the point and the rest of G, zeros, exponent m - p; G and z zeros (then
// maybe `.0...`), exponent m - L - z; `0.`, lz zeros, G, zeros, exponent m + lz. The tails
// after G are rules shared by the values with the same m, so a value costs about 2 states per
// leading-zero count plus its digits.
void Emitter::number_spellings(const DecimalValue& v, uint32_t s, uint32_t end, bool plain_integer) {
  const std::string& g = v.digits;
  const int64_t L = int64_t(g.size()), m = v.exponent + L;
  if (L > 20) return;  // (no value has more than 20 significant digits)
  auto digits = [&](uint32_t at, int64_t from, int64_t to) {
    for (int64_t k = from; k < to; ++k) {
      uint32_t next = b_.new_state();
      b_.bytes(at, next, uint8_t(g[size_t(k)]), uint8_t(g[size_t(k)]));
      at = next;
    }
    return at;
  };
  uint32_t at = s;
  for (int64_t p = 1; p <= L; ++p) {
    at = digits(at, p - 1, p);
    if (p == L) break;
    const uint32_t point = b_.new_state();
    b_.literal(at, point, ".");
    b_.call(digits(point, p, L), frac_zeros_rule(m - p, exponent_in_cap(p, m - p)), end);
  }
  b_.call(at, int_zeros_rule(m, L, plain_integer), end);
  // `0.` and lz zeros, then G (one rule, called once per lz) and the tail for m + lz.
  const uint32_t g_rule = b_.new_rule(), g_end = b_.new_state();
  b_.set_final(g_end);
  b_.eps(digits(b_.rule_start(g_rule), 0, L), g_end);
  uint32_t lead = b_.new_state();
  b_.literal(s, lead, "0.");
  for (int64_t lz = 0;; ++lz) {
    const uint32_t after = b_.new_state();
    b_.call(lead, g_rule, after);
    b_.call(after, frac_zeros_rule(m + lz, exponent_in_cap(0, m + lz)), end);
    if (lz + L == 20) break;
    const uint32_t next = b_.new_state();
    b_.bytes(lead, next, '0', '0');
    lead = next;
  }
}

}  // namespace ringlm::guided::schema
