#include "chat/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/jinja/error.h"
#include "chat/jinja/text.h"
#include "util/utf8.h"

namespace ringlm::jinja {

namespace {
// Nesting limit for recursive walks (str, repr, JSON, equality): deep or self-referential
// data (a namespace stored inside itself) must give an error, not overflow the stack.
constexpr int kMaxDepth = 512;

void check_depth(int depth) {
  if (depth > kMaxDepth) runtime_fail("value nested deeper than ", kMaxDepth, " levels");
}
}  // namespace

const Value* Object::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

Value* Object::find(std::string_view key) {
  for (auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Object::set(std::string key, Value value) {
  if (Value* v = find(key)) {
    *v = std::move(value);
  } else {
    items.emplace_back(std::move(key), std::move(value));
  }
}

const Value* CallArgs::get(std::size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.data_ = b;
  return v;
}
Value Value::integer(std::int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.data_ = i;
  return v;
}
Value Value::floating(double d) {
  Value v;
  v.kind_ = Kind::Float;
  v.data_ = d;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.data_ = std::move(s);
  return v;
}
Value Value::array(Array items) {
  Value v;
  v.kind_ = Kind::Array;
  v.data_ = std::make_shared<Array>(std::move(items));
  return v;
}
Value Value::tuple(Array items) {
  Value v = array(std::move(items));
  v.tuple_ = true;
  return v;
}
Value Value::object(Object obj) {
  Value v;
  v.kind_ = Kind::Object;
  v.data_ = std::make_shared<Object>(std::move(obj));
  return v;
}
Value Value::function(std::string name, std::function<Value(CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::Function;
  v.data_ = std::make_shared<Function>(Function{std::move(name), std::move(fn)});
  return v;
}

static Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  check_depth(depth);
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return Value::floating(static_cast<double>(u));
      return Value::integer(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::floating(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      a.reserve(j.size());
      for (const auto& e : j) a.push_back(from_json_at(e, depth + 1));
      return Value::array(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object o;
      o.items.reserve(j.size());
      // An ordered_json object's keys are unique already: appending skips Object::set's linear
      // search, which made converting an object of N keys cost N^2 (issue #28).
      for (auto it = j.begin(); it != j.end(); ++it) o.items.emplace_back(it.key(), from_json_at(it.value(), depth + 1));
      return Value::object(std::move(o));
    }
    default:
      return Value::none();
  }
}

Value Value::from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

double Value::as_number() const {
  switch (kind_) {
    case Kind::Int:
      return static_cast<double>(as_int());
    case Kind::Float:
      return as_float();
    case Kind::Bool:
      return as_bool() ? 1.0 : 0.0;
    default:
      runtime_fail("expected a number, got ", type_name());
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return as_bool();
    case Kind::Int:
      return as_int() != 0;
    case Kind::Float:
      return as_float() != 0.0;
    case Kind::String:
      return !as_string().empty();
    case Kind::Array:
      return !as_array().empty();
    case Kind::Object:
      return as_object().is_namespace || !as_object().items.empty();
    case Kind::Function:
      return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::Array: return "list";
    case Kind::Object: return as_object().is_namespace ? "Namespace" : "dict";
    case Kind::Function: return "function";
  }
  return "?";
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci = [-]D[.DDD]e[+-]XX
  bool neg = sci[0] == '-';
  std::size_t epos = sci.find('e');
  std::string mant = sci.substr(neg ? 1 : 0, epos - (neg ? 1 : 0));
  int exp10 = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (char c : mant)
    if (c != '.') digits.push_back(c);
  int decpt = exp10 + 1;  // position of the decimal point relative to the digits
  std::string out = neg ? "-" : "";
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    out += e;
  } else if (decpt <= 0) {
    out += "0." + std::string(-decpt, '0') + digits;
  } else if (static_cast<std::size_t>(decpt) >= digits.size()) {
    out += digits + std::string(decpt - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  return out;
}

namespace {

std::string repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  char buf[16];
  for (char32_t c : text::decode(s)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == static_cast<char32_t>(quote)) {
      out += '\\';
      out += quote;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
               (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF || c == 0x1680) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      utf8::append(out, c);
    }
  }
  out += quote;
  return out;
}

std::string repr_at(const Value& v, int depth);

std::string str_at(const Value& v, int depth) {
  check_depth(depth);
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return "";
    case Value::Kind::None:
      return "None";
    case Value::Kind::Bool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::Int:
      return std::to_string(v.as_int());
    case Value::Kind::Float:
      return format_float(v.as_float());
    case Value::Kind::String:
      return v.as_string();
    case Value::Kind::Array: {
      std::string out = v.is_tuple() ? "(" : "[";
      bool first = true;
      for (const auto& e : v.as_array()) {
        if (!first) out += ", ";
        first = false;
        out += repr_at(e, depth + 1);
      }
      if (v.is_tuple()) return out + (v.as_array().size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Value::Kind::Object: {
      std::string out = v.as_object().is_namespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, e] : v.as_object().items) {
        if (!first) out += ", ";
        first = false;
        out += repr_string(k) + ": " + repr_at(e, depth + 1);
      }
      return out + (v.as_object().is_namespace ? "}>" : "}");
    }
    case Value::Kind::Function:
      return "<function " + v.as_function().name + ">";
  }
  return "";
}

std::string repr_at(const Value& v, int depth) {
  if (v.is_string()) return repr_string(v.as_string());
  if (v.is_undefined()) return "Undefined";
  return str_at(v, depth);
}

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  char buf[16];
  if (ensure_ascii) {
    for (char32_t c : text::decode(s)) {
      if (c < 0x80) {
        std::string one(1, static_cast<char>(c));
        std::string piece;
        json_string(piece, one, false);
        out.append(piece, 1, piece.size() - 2);
      } else if (c < 0x10000) {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
        out += buf;
      } else {
        char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
        out += buf;
      }
    }
    out += '"';
    return;
  }
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void json_at(std::string& out, const Value& v, const JsonFormat& f, int depth) {
  check_depth(depth);
  const int indent = f.indent;
  const std::string item_sep = f.item_separator ? *f.item_separator : indent >= 0 ? "," : ", ";
  const std::string key_sep = f.key_separator ? *f.key_separator : ": ";
  auto newline = [&](int level) {
    out += '\n';
    out.append(static_cast<std::size_t>(indent) * level, ' ');
  };
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      out += "null";
      return;
    case Value::Kind::Bool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::Int:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::Float: {
      double d = v.as_float();
      if (std::isnan(d)) out += "NaN";
      else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
      else out += format_float(d);
      return;
    }
    case Value::Kind::String:
      json_string(out, v.as_string(), f.ensure_ascii);
      return;
    case Value::Kind::Array: {
      const auto& a = v.as_array();
      if (a.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i) out += item_sep;
        if (indent >= 0) newline(depth + 1);
        json_at(out, a[i], f, depth + 1);
      }
      if (indent >= 0) newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::Object: {
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.as_object().items) items.push_back(&kv);
      if (items.empty()) {
        out += "{}";
        return;
      }
      if (f.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        if (indent >= 0) newline(depth + 1);
        json_string(out, items[i]->first, f.ensure_ascii);
        out += key_sep;
        json_at(out, items[i]->second, f, depth + 1);
      }
      if (indent >= 0) newline(depth);
      out += '}';
      return;
    }
    case Value::Kind::Function:
      runtime_fail("object of type function is not JSON serializable");
  }
}

}  // namespace

std::string Value::str() const { return str_at(*this, 0); }
std::string Value::repr() const { return repr_at(*this, 0); }

std::string Value::to_json(int indent, bool sort_keys) const {
  JsonFormat f;
  f.indent = indent;
  f.sort_keys = sort_keys;
  return to_json(f);
}

std::string Value::to_json(const JsonFormat& format) const {
  std::string out;
  json_at(out, *this, format, 0);
  return out;
}


static bool equals_at(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  auto numeric = [](const Value& v) { return v.is_number() || v.is_bool(); };
  if (numeric(a) && numeric(b)) {
    if (a.is_float() || b.is_float()) return a.as_number() == b.as_number();
    auto iv = [](const Value& v) { return v.is_bool() ? std::int64_t(v.as_bool()) : v.as_int(); };
    return iv(a) == iv(b);
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return true;
    case Value::Kind::String:
      return a.as_string() == b.as_string();
    case Value::Kind::Array: {
      const auto &x = a.as_array(), &y = b.as_array();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!equals_at(x[i], y[i], depth + 1)) return false;
      return true;
    }
    case Value::Kind::Object: {
      const auto &x = a.as_object(), &y = b.as_object();
      if (x.is_namespace || y.is_namespace) return &x == &y;
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* w = y.find(k);
        if (!w || !equals_at(v, *w, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::Function:
      return &a.as_function() == &b.as_function();
    default:
      return false;
  }
}

bool equals(const Value& a, const Value& b) { return equals_at(a, b, 0); }

int compare(const Value& a, const Value& b, bool case_sensitive) {
  auto numeric = [](const Value& v) { return v.is_number() || v.is_bool(); };
  if (numeric(a) && numeric(b)) {
    if (a.is_int() && b.is_int()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    double x = a.as_number(), y = b.as_number();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order.
    int c = case_sensitive ? a.as_string().compare(b.as_string())
                           : text::lower(a.as_string()).compare(text::lower(b.as_string()));
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_array() && b.is_array()) {
    const auto &x = a.as_array(), &y = b.as_array();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      int c = compare(x[i], y[i], case_sensitive);
      if (c) return c;
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  runtime_fail("'<' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'");
}

}  // namespace ringlm::jinja
