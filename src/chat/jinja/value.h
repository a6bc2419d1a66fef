// The dynamic value type of the Jinja interpreter: Python's data model reduced to what chat
// templates use. Lists and dicts are shared by reference (as in Python), dicts keep insertion
// order (JSON input order), and `namespace()` objects are dicts that allow attribute assignment.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ringlm::jinja {

class Value;
using Array = std::vector<Value>;

struct Object {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;

  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(std::string key, Value value);
};

// Arguments of a call: positional, then keyword (in source order), plus the `caller` body
// of a `{% call %}` block when there is one.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  std::shared_ptr<const Value> caller;

  // Argument `index` (positional) or `name` (keyword), or nullptr when neither was given.
  const Value* get(std::size_t index, std::string_view name) const;
};

struct Function {
  std::string name;
  std::function<Value(CallArgs&)> call;
};

// Python json.dumps options as Hugging Face's `tojson` passes them.
struct JsonFormat {
  int indent = -1;  // < 0: single line
  bool sort_keys = false;
  bool ensure_ascii = false;
  // Separators; defaults as json.dumps: (", ", ": ") or ("," , ": ") when indenting.
  std::optional<std::string> item_separator, key_separator;
};

class Value {
 public:
  enum class Kind : std::uint8_t { Undefined, None, Bool, Int, Float, String, Array, Object, Function };

  Value() = default;  // undefined
  static Value none();
  static Value boolean(bool b);
  static Value integer(std::int64_t i);
  static Value floating(double d);
  static Value string(std::string s);
  static Value array(Array items = {});
  // A list that prints as a Python tuple: "(1, 2)" (tuple literals, dict items).
  static Value tuple(Array items);
  static Value object(Object obj = {});
  static Value function(std::string name, std::function<Value(CallArgs&)> fn);
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_tuple() const { return kind_ == Kind::Array && tuple_; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_mapping() const { return kind_ == Kind::Object && !as_object().is_namespace; }
  bool is_function() const { return kind_ == Kind::Function; }

  bool as_bool() const { return std::get<bool>(data_); }
  std::int64_t as_int() const { return std::get<std::int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  // Int, Float or Bool as a double.
  double as_number() const;
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const Array& as_array() const { return *std::get<std::shared_ptr<Array>>(data_); }
  Array& as_array() { return *std::get<std::shared_ptr<Array>>(data_); }
  const Object& as_object() const { return *std::get<std::shared_ptr<Object>>(data_); }
  Object& as_object() { return *std::get<std::shared_ptr<Object>>(data_); }
  const Function& as_function() const { return *std::get<std::shared_ptr<Function>>(data_); }

  // Python truthiness.
  bool truthy() const;
  // Python `str(x)` (Jinja's `{{ x }}`); undefined prints as "".
  std::string str() const;
  // Python `repr(x)`, used inside str() of lists and dicts.
  std::string repr() const;
  // Python type name for error messages ("str", "int", "dict", "undefined", ...).
  const char* type_name() const;

  // JSON for the `tojson` filter (Python json.dumps with ensure_ascii=False, key order kept).
  // indent < 0 means single-line with ", " / ": " separators.
  std::string to_json(int indent = -1, bool sort_keys = false) const;
  std::string to_json(const JsonFormat& format) const;
  nlohmann::ordered_json to_json_value() const;

 private:
  Kind kind_ = Kind::Undefined;
  bool tuple_ = false;
  std::variant<std::monostate, bool, std::int64_t, double, std::string, std::shared_ptr<Array>,
               std::shared_ptr<Object>, std::shared_ptr<Function>>
      data_;
};

// Python `==` (deep for lists and dicts; 1 == 1.0 == True).
bool equals(const Value& a, const Value& b);
// Python ordering for sorting and `<`: numbers with numbers, strings with strings (by code
// point), lists lexicographically. Throws ringlm::Error on incomparable types.
int compare(const Value& a, const Value& b, bool case_sensitive = true);

// Python float repr: shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string format_float(double d);

}  // namespace ringlm::jinja
