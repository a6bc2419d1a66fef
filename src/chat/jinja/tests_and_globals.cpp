// Built-in tests (`x is defined`), global functions and iteration, with Python semantics
// (a bool is a number, a dict and a str are sequences).
#include <chrono>
#include <ctime>
#include <unordered_map>

#include "chat/jinja/builtins.h"
#include "chat/jinja/error.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/text.h"

namespace ringlm::jinja {

namespace {

using TestFn = bool (*)(Evaluator&, const Value&, CallArgs&);

const Value& arg0(const CallArgs& a, const char* test) {
  const Value* v = a.get(0, "other");
  if (!v) runtime_fail("test '", test, "' needs an argument");
  return *v;
}

const std::unordered_map<std::string_view, TestFn>& tests() {
  static const std::unordered_map<std::string_view, TestFn> table = [] {
    std::unordered_map<std::string_view, TestFn> t;
    t["defined"] = [](Evaluator&, const Value& v, CallArgs&) { return !v.is_undefined(); };
    t["undefined"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_undefined(); };
    t["none"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_none(); };
    t["boolean"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_bool(); };
    t["true"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); };
    t["false"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); };
    t["integer"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_int(); };
    t["float"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_float(); };
    t["number"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_number() || v.is_bool(); };
    t["string"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_string(); };
    t["mapping"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_mapping(); };
    t["iterable"] = [](Evaluator&, const Value& v, CallArgs&) {
      return v.is_string() || v.is_array() || v.is_mapping() || v.is_undefined();
    };
    t["sequence"] = [](Evaluator&, const Value& v, CallArgs&) {
      return v.is_string() || v.is_array() || v.is_mapping() || v.is_undefined();
    };
    t["callable"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_function(); };
    t["escaped"] = [](Evaluator&, const Value&, CallArgs&) { return false; };
    t["odd"] = [](Evaluator&, const Value& v, CallArgs&) {
      if (!v.is_int()) runtime_fail("test 'odd' needs an integer");
      return v.as_int() % 2 != 0;
    };
    t["even"] = [](Evaluator&, const Value& v, CallArgs&) {
      if (!v.is_int()) runtime_fail("test 'even' needs an integer");
      return v.as_int() % 2 == 0;
    };
    t["divisibleby"] = [](Evaluator&, const Value& v, CallArgs& a) {
      const Value& n = arg0(a, "divisibleby");
      if (!v.is_int() || !n.is_int()) runtime_fail("test 'divisibleby' needs integers");
      if (n.as_int() == 0) runtime_fail("divisibleby 0");
      return v.as_int() % n.as_int() == 0;
    };
    t["eq"] = [](Evaluator&, const Value& v, CallArgs& a) { return equals(v, arg0(a, "eq")); };
    t["equalto"] = t["eq"];
    t["=="] = t["eq"];
    t["ne"] = [](Evaluator&, const Value& v, CallArgs& a) { return !equals(v, arg0(a, "ne")); };
    t["!="] = t["ne"];
    t["lt"] = [](Evaluator&, const Value& v, CallArgs& a) { return compare_op("<", v, arg0(a, "lt")); };
    t["lessthan"] = t["lt"];
    t["<"] = t["lt"];
    t["le"] = [](Evaluator&, const Value& v, CallArgs& a) { return compare_op("<=", v, arg0(a, "le")); };
    t["<="] = t["le"];
    t["gt"] = [](Evaluator&, const Value& v, CallArgs& a) { return compare_op(">", v, arg0(a, "gt")); };
    t["greaterthan"] = t["gt"];
    t[">"] = t["gt"];
    t["ge"] = [](Evaluator&, const Value& v, CallArgs& a) { return compare_op(">=", v, arg0(a, "ge")); };
    t[">="] = t["ge"];
    t["in"] = [](Evaluator&, const Value& v, CallArgs& a) { return contains(arg0(a, "in"), v); };
    t["sameas"] = [](Evaluator&, const Value& v, CallArgs& a) {
      const Value& o = arg0(a, "sameas");
      if (v.kind() != o.kind()) return false;
      if (v.is_none() || v.is_undefined()) return true;
      if (v.is_bool()) return v.as_bool() == o.as_bool();
      if (v.is_array()) return &v.as_array() == &o.as_array();
      if (v.is_object()) return &v.as_object() == &o.as_object();
      return equals(v, o);
    };
    t["lower"] = [](Evaluator&, const Value& v, CallArgs&) {
      std::string s = v.str();
      return text::lower(s) == s && text::upper(s) != s;
    };
    t["upper"] = [](Evaluator&, const Value& v, CallArgs&) {
      std::string s = v.str();
      return text::upper(s) == s && text::lower(s) != s;
    };
    t["filter"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_string() && has_filter(v.as_string()); };
    t["test"] = [](Evaluator&, const Value& v, CallArgs&) { return v.is_string() && has_test(v.as_string()); };
    return t;
  }();
  return table;
}

}  // namespace

bool has_test(std::string_view name) { return tests().count(name) != 0; }

bool apply_test(Evaluator& ev, std::string_view name, const Value& operand, CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) runtime_fail("no test named '", name, "'");
  return it->second(ev, operand, args);
}

Array iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Array:
      return v.as_array();
    case Value::Kind::Object: {
      Array keys;
      for (const auto& kv : v.as_object().items) keys.push_back(Value::string(kv.first));
      return keys;
    }
    case Value::Kind::String: {
      Array chars;
      auto cps = text::decode(v.as_string());
      for (std::size_t i = 0; i < cps.size(); ++i) chars.push_back(Value::string(text::encode(cps, i, i + 1)));
      return chars;
    }
    case Value::Kind::Undefined:
      return {};
    default:
      runtime_fail("'", v.type_name(), "' object is not iterable");
  }
}

void add_globals(Evaluator& ev, Scope& scope) {
  Evaluator* e = &ev;
  scope.set("range", Value::function("range", [e](CallArgs& a) -> Value {
              std::vector<std::int64_t> n;
              for (const auto& v : a.positional) {
                if (!v.is_int() && !v.is_bool()) runtime_fail("range() arguments must be integers, got ", v.type_name());
                n.push_back(v.is_bool() ? v.as_bool() : v.as_int());
              }
              if (n.empty() || n.size() > 3) runtime_fail("range() takes 1 to 3 arguments");
              std::int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1];
              std::int64_t step = n.size() == 3 ? n[2] : 1;
              if (step == 0) runtime_fail("range() step must not be zero");
              // Bound the list before building it: a huge range is a runaway template.
              long double count = step > 0 ? (static_cast<long double>(stop) - start) / step
                                           : (static_cast<long double>(start) - stop) / -step;
              if (count > static_cast<long double>(e->limits().max_steps)) runtime_fail("range() too large");
              Array out;
              if (step > 0)
                for (std::int64_t i = start; i < stop; i += step) out.push_back(Value::integer(i));
              else
                for (std::int64_t i = start; i > stop; i += step) out.push_back(Value::integer(i));
              return Value::array(std::move(out));
            }));
  scope.set("namespace", Value::function("namespace", [](CallArgs& a) -> Value {
              Object ns;
              ns.is_namespace = true;
              for (const auto& v : a.positional) {
                if (!v.is_mapping()) runtime_fail("namespace() positional argument must be a dict");
                for (const auto& [k, val] : v.as_object().items) ns.set(k, val);
              }
              for (const auto& [k, val] : a.keyword) ns.set(k, val);
              return Value::object(std::move(ns));
            }));
  scope.set("dict", Value::function("dict", [](CallArgs& a) -> Value {
              Object d;
              for (const auto& v : a.positional) {
                if (!v.is_mapping()) runtime_fail("dict() positional argument must be a dict");
                for (const auto& [k, val] : v.as_object().items) d.set(k, val);
              }
              for (const auto& [k, val] : a.keyword) d.set(k, val);
              return Value::object(std::move(d));
            }));
  scope.set("raise_exception", Value::function("raise_exception", [](CallArgs& a) -> Value {
              runtime_fail("raise_exception: ", a.positional.empty() ? std::string("(no message)") : a.positional[0].str());
            }));
  scope.set("strftime_now", Value::function("strftime_now", [](CallArgs& a) -> Value {
              const Value* fmt = a.get(0, "format");
              if (!fmt || !fmt->is_string()) runtime_fail("strftime_now() needs a format string");
              std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
              std::tm tm{};
              localtime_r(&now, &tm);
              char buf[256];
              std::size_t n = std::strftime(buf, sizeof buf, fmt->as_string().c_str(), &tm);
              return Value::string(std::string(buf, n));
            }));
  scope.set("joiner", Value::function("joiner", [](CallArgs& a) -> Value {
              const Value* sep = a.get(0, "sep");
              std::string s = sep ? sep->str() : ", ";
              auto used = std::make_shared<bool>(false);
              return Value::function("joiner", [s, used](CallArgs&) -> Value {
                if (!*used) {
                  *used = true;
                  return Value::string("");
                }
                return Value::string(s);
              });
            }));
}

}  // namespace ringlm::jinja
