// Built-in filters, with Jinja2's argument names and defaults (and Hugging Face's `tojson`:
// key order kept, ensure_ascii off unless asked for).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <unordered_map>
#include <utility>

#include "chat/jinja/builtins.h"
#include "chat/jinja/error.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/text.h"

namespace ringlm::jinja {

namespace {

using FilterFn = std::function<Value(Evaluator&, const Value&, CallArgs&)>;

bool opt_bool(const CallArgs& a, std::size_t i, const char* name, bool dflt) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : dflt;
}

std::int64_t opt_int(const CallArgs& a, std::size_t i, const char* name, std::int64_t dflt) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return dflt;
  if (v->is_int()) return v->as_int();
  if (v->is_bool()) return v->as_bool();
  runtime_fail("filter argument '", name, "' must be an integer, got ", v->type_name());
}

const Value* opt_arg(const CallArgs& a, std::size_t i, const char* name) {
  const Value* v = a.get(i, name);
  return (v && !v->is_none()) ? v : nullptr;
}

// Dotted attribute path lookup ("a.b", "items.0") as Jinja's make_attrgetter.
Value attr_path(Evaluator& ev, const Value& item, const Value& attribute) {
  if (attribute.is_int()) return get_item(ev, item, attribute);
  std::string path = attribute.str();
  Value cur = item;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    // An index needs at most 18 digits; a longer run of digits is a key (std::stoll threw past int64).
    bool digits = !part.empty() && part.size() <= 18 &&
                  std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = digits ? get_item(ev, cur, Value::integer(std::stoll(part))) : get_item(ev, cur, Value::string(part));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(text::lower(v.as_string()));
  return v;
}

Array sorted(Evaluator& ev, Array items, bool reverse, bool case_sensitive, const Value* attribute) {
  std::vector<std::pair<Value, Value>> keyed;
  keyed.reserve(items.size());
  for (auto& it : items) keyed.emplace_back(sort_key(attribute ? attr_path(ev, it, *attribute) : it, case_sensitive), it);
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& x, const auto& y) {
    int c = compare(x.first, y.first);
    return reverse ? c > 0 : c < 0;
  });
  Array out;
  out.reserve(keyed.size());
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Value to_int(const Value& v, const Value& dflt, int base) {
  switch (v.kind()) {
    case Value::Kind::Int:
      return v;
    case Value::Kind::Bool:
      return Value::integer(v.as_bool());
    case Value::Kind::Float:
      if (!std::isfinite(v.as_float()) || std::fabs(v.as_float()) > 9.2e18) return dflt;
      return Value::integer(static_cast<std::int64_t>(std::trunc(v.as_float())));
    case Value::Kind::String: {
      std::string s = text::strip(v.as_string(), true, true);
      std::string digits;
      for (char c : s)
        if (c != '_') digits += c;
      if (!digits.empty()) {
        errno = 0;
        char* end = nullptr;
        long long r = std::strtoll(digits.c_str(), &end, base);
        if (errno == 0 && end && *end == '\0') return Value::integer(r);
        // Jinja falls back to int(float(s)).
        char* fend = nullptr;
        double d = std::strtod(digits.c_str(), &fend);
        if (base == 10 && fend && *fend == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18)
          return Value::integer(static_cast<std::int64_t>(std::trunc(d)));
      }
      return dflt;
    }
    default:
      return dflt;
  }
}

Value to_float(const Value& v, const Value& dflt) {
  if (v.is_float()) return v;
  if (v.is_int() || v.is_bool()) return Value::floating(v.as_number());
  if (v.is_string()) {
    std::string s = text::strip(v.as_string(), true, true);
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end && *end == '\0') return Value::floating(d);
  }
  return dflt;
}

Value round_value(const Value& v, std::int64_t precision, const std::string& method) {
  if (!v.is_number() && !v.is_bool()) runtime_fail("round filter needs a number, got ", v.type_name());
  if (precision < 0 || precision > 300) runtime_fail("round precision out of range");
  if (method == "common") {
    if (!v.is_float()) return v.is_bool() ? Value::integer(v.as_bool()) : v;  // round(int, n) is the int
    // Python round(): correctly rounded, ties to even on the exact binary value (as glibc printf).
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), v.as_float());
    return Value::floating(std::strtod(buf, nullptr));
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value::floating(std::ceil(v.as_number() * scale) / scale);
  if (method == "floor") return Value::floating(std::floor(v.as_number() * scale) / scale);
  runtime_fail("round method must be 'common', 'ceil' or 'floor'");
}

std::string indent_text(const std::string& s, const std::string& pad, bool first, bool blank) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  std::string src = s + "\n";  // as Jinja: makes splitlines() keep a trailing empty line
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\n' || src[i] == '\r') {
      lines.push_back(src.substr(start, i - start));
      if (src[i] == '\r' && i + 1 < src.size() && src[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    bool indent = i == 0 ? first : (blank || !lines[i].empty());
    if (indent) out += pad;
    out += lines[i];
  }
  return out;
}

Value select_like(Evaluator& ev, const Value& seq, CallArgs& args, bool select, bool by_attribute) {
  Array out;
  std::size_t first_test_arg = by_attribute ? 1 : 0;
  const Value* attribute = by_attribute ? args.get(0, "attribute") : nullptr;
  if (by_attribute && !attribute) runtime_fail("selectattr/rejectattr need an attribute name");
  const Value* test = args.positional.size() > first_test_arg ? &args.positional[first_test_arg] : nullptr;
  CallArgs test_args;
  for (std::size_t i = first_test_arg + 1; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
  for (const auto& item : iterate(seq)) {
    ev.count_step();
    Value subject = attribute ? attr_path(ev, item, *attribute) : item;
    bool ok;
    if (test) {
      if (!test->is_string()) runtime_fail("test name must be a string");
      CallArgs a = test_args;
      ok = apply_test(ev, test->as_string(), subject, a);
    } else {
      ok = subject.truthy();
    }
    if (ok == select) out.push_back(item);
  }
  return Value::array(std::move(out));
}

using FilterTable = std::unordered_map<std::string_view, FilterFn>;

// The filter table is filled in two halves (as listed: "abs" to "list", then "lower" to
// "wordcount" and "pprint"), only to keep each function short.
void add_filters_abs_to_list(FilterTable& t) {
  t["abs"] = [](Evaluator&, const Value& v, CallArgs&) {
    if (v.is_float()) return Value::floating(std::fabs(v.as_float()));
    if (v.is_int() || v.is_bool()) return unary_op(v.is_int() && v.as_int() < 0 ? '-' : '+', v);
    runtime_fail("bad operand type for abs(): '", v.type_name(), "'");
  };
  t["attr"] = [](Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* name = a.get(0, "name");
    if (!name || !name->is_string()) runtime_fail("attr filter needs a name");
    return get_attribute(ev, v, name->as_string());
  };
  t["batch"] = [](Evaluator&, const Value& v, CallArgs& a) {
    std::int64_t size = opt_int(a, 0, "linecount", 0);
    if (size <= 0) runtime_fail("batch size must be positive");
    const Value* fill = opt_arg(a, 1, "fill_with");
    Array out, cur;
    for (const auto& item : iterate(v)) {
      cur.push_back(item);
      if (static_cast<std::int64_t>(cur.size()) == size) out.push_back(Value::array(std::exchange(cur, {})));
    }
    if (!cur.empty()) {
      if (fill)
        while (static_cast<std::int64_t>(cur.size()) < size) cur.push_back(*fill);
      out.push_back(Value::array(std::move(cur)));
    }
    return Value::array(std::move(out));
  };
  t["capitalize"] = [](Evaluator&, const Value& v, CallArgs&) { return Value::string(text::capitalize(v.str())); };
  t["center"] = [](Evaluator& ev, const Value& v, CallArgs& a) {
    std::string s = v.str();
    std::int64_t width = opt_int(a, 0, "width", 80);
    std::int64_t len = static_cast<std::int64_t>(text::length(s));
    if (width <= len) return Value::string(s);
    ev.check_size(static_cast<std::size_t>(width));
    std::int64_t total = width - len, left = total / 2 + (total & width & 1);
    return Value::string(std::string(left, ' ') + s + std::string(total - left, ' '));
  };
  t["default"] = [](Evaluator&, const Value& v, CallArgs& a) {
    const Value* dflt = a.get(0, "default_value");
    bool boolean = opt_bool(a, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) return dflt ? *dflt : Value::string("");
    return v;
  };
  t["d"] = t["default"];
  t["dictsort"] = [](Evaluator& ev, const Value& v, CallArgs& a) {
    if (!v.is_object()) runtime_fail("dictsort expects a dict, got ", v.type_name());
    bool case_sensitive = opt_bool(a, 0, "case_sensitive", false);
    const Value* by = opt_arg(a, 1, "by");
    bool reverse = opt_bool(a, 2, "reverse", false);
    int pos = 0;
    if (by) {
      if (by->str() == "value") pos = 1;
      else if (by->str() != "key") runtime_fail("dictsort: 'by' must be 'key' or 'value'");
    }
    Array pairs;
    for (const auto& [k, val] : v.as_object().items) pairs.push_back(Value::tuple({Value::string(k), val}));
    Value index = Value::integer(pos);
    return Value::array(sorted(ev, std::move(pairs), reverse, case_sensitive, &index));
  };
  t["escape"] = [](Evaluator&, const Value& v, CallArgs&) { return Value::string(html_escape(v.str())); };
  t["e"] = t["escape"];
  t["forceescape"] = t["escape"];
  t["first"] = [](Evaluator&, const Value& v, CallArgs&) {
    Array items = iterate(v);
    return items.empty() ? Value() : items.front();
  };
  t["last"] = [](Evaluator&, const Value& v, CallArgs&) {
    Array items = iterate(v);
    return items.empty() ? Value() : items.back();
  };
  t["float"] = [](Evaluator&, const Value& v, CallArgs& a) {
    const Value* d = a.get(0, "default");
    return to_float(v, d ? *d : Value::floating(0.0));
  };
  t["int"] = [](Evaluator&, const Value& v, CallArgs& a) {
    const Value* d = a.get(0, "default");
    std::int64_t base = opt_int(a, 1, "base", 10);
    if (base < 2 || base > 36) runtime_fail("int filter: base must be in 2..36");
    return to_int(v, d ? *d : Value::integer(0), static_cast<int>(base));
  };
  t["format"] = [](Evaluator&, const Value& v, CallArgs& a) {
    if (!a.keyword.empty()) runtime_fail("format filter: keyword arguments are not supported");
    return Value::string(percent_format(v.str(), Value::array(a.positional)));
  };
  t["indent"] = [](Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* w = a.get(0, "width");
    std::string pad;
    if (w && w->is_string()) {
      pad = w->as_string();
    } else {
      std::int64_t n = opt_int(a, 0, "width", 4);
      if (n < 0 || n > 1000) runtime_fail("indent width out of range");
      pad = std::string(static_cast<std::size_t>(n), ' ');
    }
    std::string r = indent_text(v.str(), pad, opt_bool(a, 1, "first", false), opt_bool(a, 2, "blank", false));
    ev.check_size(r.size());
    return Value::string(std::move(r));
  };
  t["items"] = [](Evaluator&, const Value& v, CallArgs&) {
    Array out;
    if (v.is_undefined()) return Value::array();
    if (!v.is_object()) runtime_fail("items filter expects a dict, got ", v.type_name());
    for (const auto& [k, val] : v.as_object().items) out.push_back(Value::tuple({Value::string(k), val}));
    return Value::array(std::move(out));
  };
  t["join"] = [](Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* sep = a.get(0, "d");
    const Value* attribute = opt_arg(a, 1, "attribute");
    std::string d = sep ? sep->str() : "";
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v)) {
      if (!first) out += d;
      first = false;
      out += (attribute ? attr_path(ev, item, *attribute) : item).str();
      ev.check_size(out.size());
    }
    return Value::string(std::move(out));
  };
  t["length"] = [](Evaluator&, const Value& v, CallArgs&) {
    switch (v.kind()) {
      case Value::Kind::String: return Value::integer(static_cast<std::int64_t>(text::length(v.as_string())));
      case Value::Kind::Array: return Value::integer(static_cast<std::int64_t>(v.as_array().size()));
      case Value::Kind::Object: return Value::integer(static_cast<std::int64_t>(v.as_object().items.size()));
      case Value::Kind::Undefined: return Value::integer(0);
      default: runtime_fail("object of type '", v.type_name(), "' has no len()");
    }
  };
  t["count"] = t["length"];
  t["list"] = [](Evaluator&, const Value& v, CallArgs&) { return Value::array(iterate(v)); };
}

void add_filters_lower_to_wordcount(FilterTable& t) {
  t["lower"] = [](Evaluator&, const Value& v, CallArgs&) { return Value::string(text::lower(v.str())); };
  t["upper"] = [](Evaluator&, const Value& v, CallArgs&) { return Value::string(text::upper(v.str())); };
  t["title"] = [](Evaluator&, const Value& v, CallArgs&) { return Value::string(text::title_words(v.str())); };
  t["map"] = [](Evaluator& ev, const Value& v, CallArgs& a) {
    Array out;
    const Value* attribute = nullptr;
    for (const auto& [k, val] : a.keyword)
      if (k == "attribute") attribute = &val;
    if (attribute) {
      const Value* dflt = nullptr;
      for (const auto& [k, val] : a.keyword)
        if (k == "default") dflt = &val;
      for (const auto& item : iterate(v)) {
        Value r = attr_path(ev, item, *attribute);
        out.push_back(r.is_undefined() && dflt ? *dflt : r);
      }
      return Value::array(std::move(out));
    }
    if (a.positional.empty() || !a.positional[0].is_string()) runtime_fail("map needs a filter name or attribute=");
    std::string name = a.positional[0].as_string();
    if (!has_filter(name)) runtime_fail("no filter named '", name, "'");
    for (const auto& item : iterate(v)) {
      ev.count_step();
      CallArgs fa;
      fa.positional.assign(a.positional.begin() + 1, a.positional.end());
      fa.keyword = a.keyword;
      out.push_back(apply_filter(ev, name, item, fa));
    }
    return Value::array(std::move(out));
  };
  auto minmax = [](bool want_max) {
    return [want_max](Evaluator& ev, const Value& v, CallArgs& a) {
      bool case_sensitive = opt_bool(a, 0, "case_sensitive", false);
      const Value* attribute = opt_arg(a, 1, "attribute");
      Array items = iterate(v);
      if (items.empty()) return Value();
      std::size_t best = 0;
      for (std::size_t i = 1; i < items.size(); ++i) {
        Value x = sort_key(attribute ? attr_path(ev, items[i], *attribute) : items[i], case_sensitive);
        Value y = sort_key(attribute ? attr_path(ev, items[best], *attribute) : items[best], case_sensitive);
        int c = compare(x, y);
        if (want_max ? c > 0 : c < 0) best = i;
      }
      return items[best];
    };
  };
  t["max"] = minmax(true);
  t["min"] = minmax(false);
  t["reject"] = [](Evaluator& ev, const Value& v, CallArgs& a) { return select_like(ev, v, a, false, false); };
  t["select"] = [](Evaluator& ev, const Value& v, CallArgs& a) { return select_like(ev, v, a, true, false); };
  t["rejectattr"] = [](Evaluator& ev, const Value& v, CallArgs& a) { return select_like(ev, v, a, false, true); };
  t["selectattr"] = [](Evaluator& ev, const Value& v, CallArgs& a) { return select_like(ev, v, a, true, true); };
  t["replace"] = [](Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* from = a.get(0, "old");
    const Value* to = a.get(1, "new");
    if (!from || !to) runtime_fail("replace filter needs old and new");
    std::string r = text::replace(v.str(), from->str(), to->str(), opt_int(a, 2, "count", -1));
    ev.check_size(r.size());
    return Value::string(std::move(r));
  };
  t["reverse"] = [](Evaluator&, const Value& v, CallArgs&) {
    if (v.is_string()) {
      auto cps = text::decode(v.as_string());
      std::reverse(cps.begin(), cps.end());
      return Value::string(text::encode(cps, 0, cps.size()));
    }
    Array items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::array(std::move(items));
  };
  t["round"] = [](Evaluator&, const Value& v, CallArgs& a) {
    const Value* method = a.get(1, "method");
    return round_value(v, opt_int(a, 0, "precision", 0), method ? method->str() : "common");
  };
  t["safe"] = [](Evaluator&, const Value& v, CallArgs&) { return v; };
  t["sort"] = [](Evaluator& ev, const Value& v, CallArgs& a) {
    return Value::array(sorted(ev, iterate(v), opt_bool(a, 0, "reverse", false), opt_bool(a, 1, "case_sensitive", false),
                               opt_arg(a, 2, "attribute")));
  };
  t["string"] = [](Evaluator&, const Value& v, CallArgs&) { return Value::string(v.str()); };
  t["sum"] = [](Evaluator& ev, const Value& v, CallArgs& a) {
    const Value* attribute = opt_arg(a, 0, "attribute");
    const Value* start = a.get(1, "start");
    Value total = start ? *start : Value::integer(0);
    for (const auto& item : iterate(v))
      total = binary_op("+", total, attribute ? attr_path(ev, item, *attribute) : item, ev.limits().max_output_bytes);
    return total;
  };
  t["tojson"] = [](Evaluator& ev, const Value& v, CallArgs& a) {
    JsonFormat f;
    const Value* indent = opt_arg(a, 0, "indent");
    if (indent) {
      if (!indent->is_int() || indent->as_int() < 0 || indent->as_int() > 64) runtime_fail("tojson: indent must be 0..64");
      f.indent = static_cast<int>(indent->as_int());
    }
    for (const auto& [k, val] : a.keyword) {
      if (k == "ensure_ascii") f.ensure_ascii = val.truthy();
      else if (k == "sort_keys") f.sort_keys = val.truthy();
      else if (k == "separators") {
        if (val.is_none()) continue;
        if (!val.is_array() || val.as_array().size() != 2) runtime_fail("tojson: separators must be a pair of strings");
        f.item_separator = val.as_array()[0].str();
        f.key_separator = val.as_array()[1].str();
      } else if (k != "indent") {
        runtime_fail("tojson: unknown argument '", k, "'");
      }
    }
    std::string r = v.to_json(f);
    ev.check_size(r.size());
    return Value::string(std::move(r));
  };
  t["trim"] = [](Evaluator&, const Value& v, CallArgs& a) {
    const Value* chars = opt_arg(a, 0, "chars");
    std::string cs = chars ? chars->str() : "";
    return Value::string(text::strip(v.str(), true, true, chars ? &cs : nullptr));
  };
  t["unique"] = [](Evaluator& ev, const Value& v, CallArgs& a) {
    bool case_sensitive = opt_bool(a, 0, "case_sensitive", false);
    const Value* attribute = opt_arg(a, 1, "attribute");
    Array out, seen;
    for (const auto& item : iterate(v)) {
      ev.count_step();
      Value key = sort_key(attribute ? attr_path(ev, item, *attribute) : item, case_sensitive);
      bool dup = false;
      for (const auto& s : seen)
        if (equals(s, key)) {
          dup = true;
          break;
        }
      if (!dup) {
        seen.push_back(key);
        out.push_back(item);
      }
    }
    return Value::array(std::move(out));
  };
  t["wordcount"] = [](Evaluator&, const Value& v, CallArgs&) {
    std::int64_t n = 0;
    bool in_word = false;
    for (char32_t c : text::decode(v.str())) {
      bool w = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value::integer(n);
  };
  t["pprint"] = [](Evaluator&, const Value& v, CallArgs&) { return Value::string(v.repr()); };
}

const std::unordered_map<std::string_view, FilterFn>& filters() {
  static const FilterTable table = [] {
    FilterTable t;
    add_filters_abs_to_list(t);
    add_filters_lower_to_wordcount(t);
    return t;
  }();
  return table;
}

}  // namespace

bool has_filter(std::string_view name) { return filters().count(name) != 0; }

Value apply_filter(Evaluator& ev, std::string_view name, const Value& operand, CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) runtime_fail("no filter named '", name, "'");
  return it->second(ev, operand, args);
}

}  // namespace ringlm::jinja
