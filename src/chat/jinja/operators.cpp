#include "chat/jinja/operators.h"

#include <cmath>
#include <cctype>
#include <cstdio>
#include <limits>

#include "chat/jinja/error.h"
#include "chat/jinja/text.h"
#include "util/utf8.h"

namespace ringlm::jinja {

namespace {

bool numeric(const Value& v) { return v.is_number() || v.is_bool(); }
bool integral(const Value& v) { return v.is_int() || v.is_bool(); }
std::int64_t int_of(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
  runtime_fail("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'");
}

Value repeat(const Value& seq, std::int64_t times, std::size_t max_bytes) {
  if (times <= 0) return seq.is_string() ? Value::string("") : Value::array();
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && static_cast<std::uint64_t>(times) > max_bytes / s.size())
      runtime_fail("string repetition larger than ", max_bytes, " bytes");
    std::string out;
    out.reserve(s.size() * static_cast<std::size_t>(times));
    for (std::int64_t i = 0; i < times; ++i) out += s;
    return Value::string(std::move(out));
  }
  const Array& a = seq.as_array();
  if (!a.empty() && static_cast<std::uint64_t>(times) > (max_bytes / 16) / a.size())
    runtime_fail("list repetition too large");
  Array out;
  for (std::int64_t i = 0; i < times; ++i) out.insert(out.end(), a.begin(), a.end());
  return Value::array(std::move(out));
}

}  // namespace

Value binary_op(std::string_view op, const Value& a, const Value& b, std::size_t max_bytes) {
  if (op == "~") {
    std::string s = a.str();
    s += b.str();
    if (s.size() > max_bytes) runtime_fail("string larger than ", max_bytes, " bytes");
    return Value::string(std::move(s));
  }
  if (numeric(a) && numeric(b)) {
    const bool ints = integral(a) && integral(b);
    if (op == "+" || op == "-" || op == "*") {
      if (ints) {
        std::int64_t x = int_of(a), y = int_of(b), r;
        bool overflow = op == "+" ? __builtin_add_overflow(x, y, &r)
                        : op == "-" ? __builtin_sub_overflow(x, y, &r)
                                    : __builtin_mul_overflow(x, y, &r);
        if (overflow) runtime_fail("integer overflow in ", op);
        return Value::integer(r);
      }
      double x = a.as_number(), y = b.as_number();
      return Value::floating(op == "+" ? x + y : op == "-" ? x - y : x * y);
    }
    if (op == "/") {
      if (b.as_number() == 0) runtime_fail("division by zero");
      return Value::floating(a.as_number() / b.as_number());
    }
    if (op == "//" || op == "%") {
      if (b.as_number() == 0) runtime_fail(op == "//" ? "integer division or modulo by zero" : "modulo by zero");
      if (ints) {
        std::int64_t x = int_of(a), y = int_of(b);
        if (x == std::numeric_limits<std::int64_t>::min() && y == -1) runtime_fail("integer overflow in ", op);
        std::int64_t q = x / y, r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) {
          --q;
          r += y;
        }
        return Value::integer(op == "//" ? q : r);
      }
      double x = a.as_number(), y = b.as_number();
      if (op == "//") return Value::floating(std::floor(x / y));
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value::floating(r);
    }
    if (op == "**") {
      if (ints && int_of(b) >= 0) {
        std::int64_t base = int_of(a), exp = int_of(b), r = 1;
        while (exp > 0) {
          if (exp & 1)
            if (__builtin_mul_overflow(r, base, &r)) runtime_fail("integer overflow in **");
          exp >>= 1;
          if (exp && __builtin_mul_overflow(base, base, &base)) runtime_fail("integer overflow in **");
        }
        return Value::integer(r);
      }
      double x = a.as_number(), y = b.as_number();
      if (x == 0 && y < 0) runtime_fail("0.0 cannot be raised to a negative power");
      return Value::floating(std::pow(x, y));
    }
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.as_string().size() + b.as_string().size() > max_bytes) runtime_fail("string larger than ", max_bytes, " bytes");
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is_array() && b.is_array()) {
      Array out = a.as_array();
      out.insert(out.end(), b.as_array().begin(), b.as_array().end());
      return Value::array(std::move(out));
    }
    if (a.is_string() && !b.is_undefined())
      runtime_fail("can only concatenate str (not \"", b.type_name(), "\") to str");
  }
  if (op == "*") {
    if ((a.is_string() || a.is_array()) && integral(b)) return repeat(a, int_of(b), max_bytes);
    if ((b.is_string() || b.is_array()) && integral(a)) return repeat(b, int_of(a), max_bytes);
  }
  if (op == "%" && a.is_string()) {
    std::string s = percent_format(a.as_string(), b);
    if (s.size() > max_bytes) runtime_fail("string larger than ", max_bytes, " bytes");
    return Value::string(std::move(s));
  }
  if (a.is_undefined() || b.is_undefined())
    runtime_fail("undefined value used with operator ", op);
  unsupported(op, a, b);
}

Value unary_op(char op, const Value& v) {
  if (v.is_float()) return Value::floating(op == '-' ? -v.as_float() : v.as_float());
  if (integral(v)) {
    std::int64_t x = int_of(v);
    if (op == '-' && x == std::numeric_limits<std::int64_t>::min()) runtime_fail("integer overflow in unary -");
    return Value::integer(op == '-' ? -x : x);
  }
  runtime_fail("bad operand type for unary ", op, ": '", v.type_name(), "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::String:
      if (!item.is_string()) runtime_fail("'in <string>' requires string as left operand, not ", item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::Array:
      for (const auto& e : container.as_array())
        if (equals(e, item)) return true;
      return false;
    case Value::Kind::Object:
      if (!item.is_string()) return false;
      return container.as_object().find(item.as_string()) != nullptr;
    case Value::Kind::Undefined:
      return false;
    default:
      runtime_fail("argument of type '", container.type_name(), "' is not iterable");
  }
}

bool compare_op(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in") return contains(b, a);
  if (op == "notin") return !contains(b, a);
  if (a.is_undefined() || b.is_undefined() || a.is_none() || b.is_none())
    runtime_fail("'", op, "' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'");
  int c = compare(a, b);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;  // ">="
}

Value slice_value(const Value& obj, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                  std::optional<std::int64_t> step_opt) {
  std::int64_t step = step_opt.value_or(1);
  if (step == 0) runtime_fail("slice step cannot be zero");
  std::vector<char32_t> cps;
  std::int64_t n;
  if (obj.is_string()) {
    cps = text::decode(obj.as_string());
    n = static_cast<std::int64_t>(cps.size());
  } else if (obj.is_array()) {
    n = static_cast<std::int64_t>(obj.as_array().size());
  } else if (obj.is_undefined()) {
    return Value();
  } else {
    runtime_fail("'", obj.type_name(), "' object is not subscriptable");
  }
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<std::int64_t> v, std::int64_t dflt) {
    if (!v) return dflt;
    std::int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  std::int64_t lo = adjust(start, step < 0 ? n - 1 : 0);
  std::int64_t hi = adjust(stop, step < 0 ? -1 : n);
  std::vector<std::int64_t> idx;
  if (step > 0)
    for (std::int64_t i = lo; i < hi; i += step) idx.push_back(i);
  else
    for (std::int64_t i = lo; i > hi; i += step) idx.push_back(i);
  if (obj.is_string()) {
    std::string out;
    for (auto i : idx) utf8::append(out, cps[static_cast<std::size_t>(i)]);
    return Value::string(std::move(out));
  }
  Array out;
  for (auto i : idx) out.push_back(obj.as_array()[static_cast<std::size_t>(i)]);
  return Value::array(std::move(out));
}

constexpr int kMaxFormatWidth = 4096;

std::string percent_format(const std::string& fmt, const Value& args) {
  Array values = args.is_array() ? args.as_array() : Array{args};
  std::size_t next = 0;
  std::string out;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) runtime_fail("incomplete format");
    if (fmt[i] == '%') {
      out += '%';
      continue;
    }
    std::string spec = "%";
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) spec += fmt[i++];
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) spec += fmt[i++];
    if (i < fmt.size() && fmt[i] == '.') {
      spec += fmt[i++];
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) spec += fmt[i++];
    }
    if (i >= fmt.size()) runtime_fail("incomplete format");
    if (spec.size() > 12) runtime_fail("format specifier too long");
    // Width and precision are capped: "%999999999s" would pad to a gigabyte before any output
    // limit saw it, and snprintf below writes into a fixed buffer (fuzz finding).
    for (std::size_t k = 1, digits = 0; k <= spec.size(); ++k) {
      if (k < spec.size() && std::isdigit(static_cast<unsigned char>(spec[k]))) {
        if (++digits > 4 || std::stoi(spec.substr(k + 1 - digits, digits)) > kMaxFormatWidth)
          runtime_fail("format width or precision in '", spec, "' is over ", kMaxFormatWidth);
      } else {
        digits = 0;
      }
    }
    char conv = fmt[i];
    if (next >= values.size()) runtime_fail("not enough arguments for format string");
    const Value& v = values[next++];
    char buf[kMaxFormatWidth + 400];  // the widest field, plus the digits of any double
    switch (conv) {
      case 's':
      case 'r': {
        // Width and precision count code points, so they are applied here, not by snprintf.
        std::string s = conv == 's' ? v.str() : v.repr();
        bool left = spec.find('-') != std::string::npos;
        std::size_t dot = spec.find('.');
        std::string width_digits, prec_digits;
        for (std::size_t k = 1; k < spec.size() && k < dot; ++k)
          if (std::isdigit(static_cast<unsigned char>(spec[k]))) width_digits += spec[k];
        if (dot != std::string::npos) prec_digits = spec.substr(dot + 1);
        if (dot != std::string::npos) {
          auto cps = text::decode(s);
          std::size_t prec = prec_digits.empty() ? 0 : std::stoul(prec_digits);
          if (prec < cps.size()) s = text::encode(cps, 0, prec);
        }
        std::size_t width = width_digits.empty() ? 0 : std::stoul(width_digits);
        std::size_t len = text::length(s);
        std::string pad = width > len ? std::string(width - len, ' ') : "";
        out += left ? s + pad : pad + s;
        break;
      }
      case 'd':
      case 'i':
      case 'x':
      case 'X':
      case 'o':
        if (!v.is_number() && !v.is_bool()) runtime_fail("%", conv, " format: a number is required, not ", v.type_name());
        std::snprintf(buf, sizeof buf, (spec + "ll" + (conv == 'i' ? 'd' : conv)).c_str(),
                      static_cast<long long>(v.is_float() ? std::trunc(v.as_float()) : v.as_number()));
        out += buf;
        break;
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
        if (!v.is_number() && !v.is_bool()) runtime_fail("%", conv, " format: a number is required, not ", v.type_name());
        std::snprintf(buf, sizeof buf, (spec + conv).c_str(), v.as_number());
        out += buf;
        break;
      case 'c':
        if (v.is_string()) out += v.as_string();
        else if (v.is_int() && v.as_int() >= 0 && v.as_int() <= 0x10FFFF) utf8::append(out, static_cast<char32_t>(v.as_int()));
        else runtime_fail("%c requires an int or a char");
        break;
      default:
        runtime_fail("unsupported format character '", conv, "'");
    }
  }
  if (next < values.size() && args.is_array()) runtime_fail("not all arguments converted during string formatting");
  return out;
}

}  // namespace ringlm::jinja
