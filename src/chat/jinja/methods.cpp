// Attribute and item access, and the Python methods of str and dict values.
#include <algorithm>
#include <cstdint>

#include "chat/jinja/builtins.h"
#include "chat/jinja/error.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/text.h"

namespace ringlm::jinja {

namespace {

const std::string& want_string(const Value* v, const char* what) {
  if (!v || !v->is_string()) runtime_fail(what, " must be a string");
  return v->as_string();
}

std::optional<std::int64_t> opt_int(const Value* v, const char* what) {
  if (!v || v->is_none()) return std::nullopt;
  if (v->is_int()) return v->as_int();
  if (v->is_bool()) return v->as_bool() ? 1 : 0;
  runtime_fail(what, " must be an integer");
}

Array split(const std::string& s, const Value* sep, std::int64_t maxsplit) {
  Array out;
  if (!sep || sep->is_none()) {
    // Runs of whitespace separate; no empty strings at the ends.
    auto cps = text::decode(s);
    std::size_t i = 0, n = cps.size();
    while (true) {
      while (i < n && text::is_space(cps[i])) ++i;
      if (i >= n) break;
      if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) >= maxsplit) {
        std::size_t e = n;
        while (e > i && text::is_space(cps[e - 1])) --e;
        out.push_back(Value::string(text::encode(cps, i, e)));
        break;
      }
      std::size_t j = i;
      while (j < n && !text::is_space(cps[j])) ++j;
      out.push_back(Value::string(text::encode(cps, i, j)));
      i = j;
    }
    return out;
  }
  const std::string& d = want_string(sep, "separator");
  if (d.empty()) runtime_fail("empty separator");
  std::size_t pos = 0;
  while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
    std::size_t hit = s.find(d, pos);
    if (hit == std::string::npos) break;
    out.push_back(Value::string(s.substr(pos, hit - pos)));
    pos = hit + d.size();
  }
  out.push_back(Value::string(s.substr(pos)));
  return out;
}

bool affix_match(const std::string& s, const Value* arg, bool prefix) {
  auto one = [&](const std::string& a) {
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (arg && arg->is_string()) return one(arg->as_string());
  if (arg && arg->is_array()) {
    for (const auto& e : arg->as_array())
      if (one(want_string(&e, "prefix/suffix tuple item"))) return true;
    return false;
  }
  runtime_fail(prefix ? "startswith" : "endswith", " first arg must be str or a tuple of str");
}

// Python str.format with positional `{}` / `{0}` and keyword `{name}` fields, `!s` / `!r`
// conversions, and `{{` / `}}` escapes. Format specs are not supported.
std::string str_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  std::size_t auto_index = 0;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
      else runtime_fail("single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    std::size_t close = fmt.find('}', i);
    if (close == std::string::npos) runtime_fail("single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (auto bang = field.find('!'); bang != std::string::npos) {
      if (bang + 1 < field.size()) conversion = field[bang + 1];
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) runtime_fail("format specs in str.format() are not supported");
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_index < args.positional.size() ? &args.positional[auto_index] : nullptr;
      ++auto_index;
    } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
      // The leading digits are the index (std::stoul threw past size_t on a long run).
      if (std::min(field.find_first_not_of("0123456789"), field.size()) > 9) runtime_fail("str.format() index in '{", field, "}' is too large");
      std::size_t k = std::stoul(field);
      v = k < args.positional.size() ? &args.positional[k] : nullptr;
    } else {
      for (const auto& [name, val] : args.keyword)
        if (name == field) v = &val;
    }
    if (!v) runtime_fail("format field '{", field, "}' has no argument");
    out += conversion == 'r' ? v->repr() : v->str();
  }
  return out;
}

Value string_method(Evaluator& ev, const std::string& s, std::string_view name) {
  auto bind = [&](auto fn) { return Value::function(std::string(name), [s, fn](CallArgs& a) -> Value { return fn(s, a); }); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool left = name != "rstrip", right = name != "lstrip";
    return bind([left, right](const std::string& s, CallArgs& a) {
      const Value* chars = a.get(0, "chars");
      if (chars && !chars->is_none()) return Value::string(text::strip(s, left, right, &want_string(chars, "chars")));
      return Value::string(text::strip(s, left, right));
    });
  }
  if (name == "split")
    return bind([](const std::string& s, CallArgs& a) {
      return Value::array(split(s, a.get(0, "sep"), opt_int(a.get(1, "maxsplit"), "maxsplit").value_or(-1)));
    });
  if (name == "splitlines")
    return bind([](const std::string& s, CallArgs&) {
      Array out;
      std::size_t start = 0;
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\n' || s[i] == '\r') {
          out.push_back(Value::string(s.substr(start, i - start)));
          if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
          start = i + 1;
        }
      }
      if (start < s.size()) out.push_back(Value::string(s.substr(start)));
      return Value::array(std::move(out));
    });
  if (name == "startswith" || name == "endswith") {
    bool prefix = name == "startswith";
    return bind([prefix](const std::string& s, CallArgs& a) { return Value::boolean(affix_match(s, a.get(0, "prefix"), prefix)); });
  }
  if (name == "replace")
    return bind([&ev](const std::string& s, CallArgs& a) {
      const std::string& from = want_string(a.get(0, "old"), "replace() old");
      const std::string& to = want_string(a.get(1, "new"), "replace() new");
      std::string r = text::replace(s, from, to, opt_int(a.get(2, "count"), "count").value_or(-1));
      ev.check_size(r.size());
      return Value::string(std::move(r));
    });
  if (name == "upper") return bind([](const std::string& s, CallArgs&) { return Value::string(text::upper(s)); });
  if (name == "lower") return bind([](const std::string& s, CallArgs&) { return Value::string(text::lower(s)); });
  if (name == "title") return bind([](const std::string& s, CallArgs&) { return Value::string(text::title(s)); });
  if (name == "capitalize") return bind([](const std::string& s, CallArgs&) { return Value::string(text::capitalize(s)); });
  if (name == "count")
    return bind([](const std::string& s, CallArgs& a) {
      const std::string& sub = want_string(a.get(0, "sub"), "count() argument");
      if (sub.empty()) return Value::integer(static_cast<std::int64_t>(text::length(s) + 1));
      std::int64_t n = 0;
      for (std::size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value::integer(n);
    });
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    bool reverse = name[0] == 'r';
    bool strict = name.find("index") != std::string_view::npos;
    return bind([reverse, strict](const std::string& s, CallArgs& a) {
      const std::string& sub = want_string(a.get(0, "sub"), "find() argument");
      std::size_t p = reverse ? s.rfind(sub) : s.find(sub);
      if (p == std::string::npos) {
        if (strict) runtime_fail("substring not found");
        return Value::integer(-1);
      }
      return Value::integer(static_cast<std::int64_t>(text::length(std::string_view(s).substr(0, p))));
    });
  }
  if (name == "join")
    return bind([&ev](const std::string& s, CallArgs& a) {
      const Value* items = a.get(0, "iterable");
      if (!items) runtime_fail("join() takes exactly one argument");
      std::string out;
      bool first = true;
      for (const auto& e : iterate(*items)) {
        if (!first) out += s;
        first = false;
        out += want_string(&e, "join() item");
        ev.check_size(out.size());
      }
      return Value::string(std::move(out));
    });
  if (name == "format")
    return bind([&ev](const std::string& s, CallArgs& a) {
      std::string r = str_format(s, a);
      ev.check_size(r.size());
      return Value::string(std::move(r));
    });
  auto predicate = [&](bool (*pred)(char32_t)) {
    return bind([pred](const std::string& s, CallArgs&) {
      auto cps = text::decode(s);
      if (cps.empty()) return Value::boolean(false);
      for (char32_t c : cps)
        if (!pred(c)) return Value::boolean(false);
      return Value::boolean(true);
    });
  };
  if (name == "isdigit") return predicate([](char32_t c) { return c >= '0' && c <= '9'; });
  if (name == "isspace") return predicate([](char32_t c) { return text::is_space(c); });
  if (name == "isalpha")
    return predicate([](char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0xC0; });
  if (name == "isalnum")
    return predicate([](char32_t c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0xC0;
    });
  if (name == "islower")
    return bind([](const std::string& s, CallArgs&) {
      return Value::boolean(text::lower(s) == s && text::upper(s) != s);
    });
  if (name == "isupper")
    return bind([](const std::string& s, CallArgs&) {
      return Value::boolean(text::upper(s) == s && text::lower(s) != s);
    });
  return Value();
}

Value dict_method(const Value& obj, std::string_view name) {
  auto bind = [&](auto fn) { return Value::function(std::string(name), [obj, fn](CallArgs& a) -> Value { return fn(obj.as_object(), a); }); };
  if (name == "items")
    return bind([](const Object& o, CallArgs&) {
      Array out;
      for (const auto& [k, v] : o.items) out.push_back(Value::tuple({Value::string(k), v}));
      return Value::array(std::move(out));
    });
  if (name == "keys")
    return bind([](const Object& o, CallArgs&) {
      Array out;
      for (const auto& kv : o.items) out.push_back(Value::string(kv.first));
      return Value::array(std::move(out));
    });
  if (name == "values")
    return bind([](const Object& o, CallArgs&) {
      Array out;
      for (const auto& kv : o.items) out.push_back(kv.second);
      return Value::array(std::move(out));
    });
  if (name == "get")
    return bind([](const Object& o, CallArgs& a) {
      const Value* key = a.get(0, "key");
      if (!key) runtime_fail("get() needs a key");
      const Value* v = key->is_string() ? o.find(key->as_string()) : nullptr;
      if (v) return *v;
      const Value* dflt = a.get(1, "default");
      return dflt ? *dflt : Value::none();
    });
  if (name == "copy") return bind([](const Object& o, CallArgs&) { return Value::object(o); });
  return Value();
}

}  // namespace

Value get_attribute(Evaluator& ev, const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Value::Kind::Object: {
      const Object& o = obj.as_object();
      if (o.is_namespace) {
        const Value* v = o.find(name);
        return v ? *v : Value();
      }
      // Jinja's getattr looks at the Python attribute first: dict methods shadow keys.
      Value method = dict_method(obj, name);
      if (!method.is_undefined()) return method;
      const Value* v = o.find(name);
      return v ? *v : Value();
    }
    case Value::Kind::String:
      return string_method(ev, obj.as_string(), name);
    default:
      return Value();
  }
}

Value get_item(Evaluator& ev, const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::Array: {
      if (!key.is_int() && !key.is_bool()) return key.is_string() ? get_attribute(ev, obj, key.as_string()) : Value();
      std::int64_t i = key.is_bool() ? key.as_bool() : key.as_int();
      const auto n = static_cast<std::int64_t>(obj.as_array().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value();
      return obj.as_array()[static_cast<std::size_t>(i)];
    }
    case Value::Kind::String: {
      if (!key.is_int()) return key.is_string() ? get_attribute(ev, obj, key.as_string()) : Value();
      auto cps = text::decode(obj.as_string());
      std::int64_t i = key.as_int();
      const auto n = static_cast<std::int64_t>(cps.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value();
      return Value::string(text::encode(cps, static_cast<std::size_t>(i), static_cast<std::size_t>(i) + 1));
    }
    case Value::Kind::Object: {
      if (!key.is_string()) return Value();
      const Value* v = obj.as_object().find(key.as_string());
      if (v) return *v;
      return obj.as_object().is_namespace ? Value() : dict_method(obj, key.as_string());
    }
    default:
      return Value();
  }
}

}  // namespace ringlm::jinja
