// The emission pass: writes the grammar of each normalised form (schema_passes.h) into the
// grammar builder. This file: dispatch, conditional cases, leaves (types, `not`, enum values)
// and the rule for any JSON value; numbers and strings are in schema_emit_scalars.cpp, arrays
// and objects in schema_emit_array.cpp / schema_emit_object.cpp.
#include <algorithm>

#include "guided/formats.h"
#include "guided/schema_passes.h"
#include "util/error.h"

namespace ringlm::guided::schema {

Emitter::Emitter(Context& cx) : cx_(cx), norm_(cx), limits_(cx.limits) { b_.set_max_states(limits_.grammar_states); }

CompiledSchema Emitter::run() {
  uint32_t root = rule_for(cx_.root);
  CompiledSchema out;
  out.grammar = b_.finish(root);
  out.property_orders = order_;
  out.unenforced = cx_.unenforced_notes;
  out.grammar.unenforced = cx_.unenforced_notes;
  return out;
}

uint32_t Emitter::rule_for(const Json& s) {
  auto it = memo_.find(&s);
  if (it != memo_.end()) return it->second;
  std::string text;
  if (s.is_object()) {
    text = s.dump();
    if (auto hit = memo_by_text_.find(text); hit != memo_by_text_.end()) {
      memo_[&s] = hit->second;
      return hit->second;
    }
  }
  uint32_t r = b_.new_rule();
  memo_[&s] = r;
  if (!text.empty()) memo_by_text_.emplace(std::move(text), r);
  uint32_t end = b_.new_state();
  b_.set_final(end);
  value(s, b_.rule_start(r), end);
  return r;
}

namespace {

// Rewrites an error from inside schema `w` to name its location: "keyword 'K'" becomes
// "keyword 'K' at /pointer/K" (the keyword's own pointer when `w` has it, else the schema's).
[[noreturn]] void rethrow_at(const Error& e, const Context::Where& w) {
  std::string msg = e.what();
  if (msg.find("' at /") != std::string::npos || msg.find(" (at /") != std::string::npos) throw e;
  std::string ptr = *w.pointer;
  auto q = msg.find("keyword '");
  if (q != std::string::npos) {
    auto end = msg.find('\'', q + 9);
    if (end != std::string::npos) {
      std::string kw = msg.substr(q + 9, end - q - 9);
      if (w.schema->is_object() && w.schema->contains(kw)) ptr += "/" + pointer_escape(kw);
      throw Error(msg.substr(0, end + 1) + " at " + (ptr.empty() ? "/" : ptr) + msg.substr(end + 1));
    }
  }
  throw Error(msg + " (at " + (ptr.empty() ? "/" : ptr) + ")");
}

}  // namespace

// Emits every serialisation of a value valid under `s` between `from` and `to`.
void Emitter::value(const Json& s, uint32_t from, uint32_t to) {
  auto known = cx_.pointers.find(&s);
  if (known == cx_.pointers.end()) {
    value_at(s, no_extras(), from, to);
    return;
  }
  cx_.where.push_back({&s, &known->second});
  try {
    value_at(s, no_extras(), from, to);
  } catch (const Error& e) {
    Context::Where w = cx_.where.back();
    cx_.where.pop_back();
    rethrow_at(e, w);
  }
  cx_.where.pop_back();
}

// A node built by normalisation: no pointer of its own.
void Emitter::value(const Node& n, uint32_t from, uint32_t to) { value_at(n.keywords, n.extras, from, to); }

void Emitter::value_at(const Json& s, const Extras& x, uint32_t from, uint32_t to) {
  DepthGuard guard(cx_);
  Form f = norm_.normalize(s, x);
  if (f.negated) {
    // A form built by negation: bounded in the states it adds (copies of a branch).
    size_t before = b_.num_states(), most = kNegationStatesPerNode * limits_.negation_size;
    emit_form(f, from, to);
    if (b_.num_states() - before > most) {
      fail("unsupported keyword '", f.negated, "' (its exact form by negation needs more than ", most,
           " grammar states)");
    }
    return;
  }
  emit_form(f, from, to);
}

void Emitter::emit_form(const Form& f, uint32_t from, uint32_t to) {
  switch (f.kind) {
    case Form::kNothing: return;  // false: no path
    case Form::kAnything: b_.call(from, any_rule(), to); return;
    case Form::kCall: b_.call(from, rule_for(*f.schema), to); return;
    case Form::kInline:
      if (f.node) value(*f.node, from, to);
      else value(*f.schema, from, to);
      return;
    case Form::kUnion: emit_union(f, from, to); return;
    case Form::kConditional: emit_conditional(f, from, to); return;
    case Form::kLeaf: leaf(*f.schema, *f.extras, from, to); return;
  }
}

void Emitter::emit_union(const Form& f, uint32_t from, uint32_t to) {
  check_tracked_alternatives(f.alternatives);
  for (const Json* alt : f.alternatives) {
    if (f.plain) {
      b_.call(from, rule_for(*alt), to);
      continue;
    }
    Node merged = norm_.with_member(f.rest, *alt);
    uint32_t r = b_.new_rule();
    uint32_t end = b_.new_state();
    b_.set_final(end);
    value(cx_.keep(std::move(merged)), b_.rule_start(r), end);
    b_.call(from, r, to);
  }
}

// ------------------------------------------------------------------ if / then / else

void Emitter::emit_conditional(const Form& f, uint32_t from, uint32_t to) {
  for (const Json& c : f.clauses) {
    if (auto* hit = tracked_unique_inside(c)) {
      fail("unsupported keyword 'uniqueItems'", unique_at(hit),
           " (an array of distinct strings under if / then / else or dependentSchemas)");
    }
  }
  ConditionalGroup g = norm_.conditional_group(f.clauses);
  for (const ConditionalCase& c : norm_.object_cases(g)) emit_case(f.rest, c, from, to);
  if (auto c = norm_.non_object_case(g, f.rest)) emit_case(f.rest, *c, from, to);
}

void Emitter::emit_case(const Node& rest, const ConditionalCase& c, uint32_t from, uint32_t to) {
  // Memoised by content: a then/else branch that reaches this same conditional schema again
  // (recursion through $ref inlined by allOf merging) calls the rule being built.
  std::string key = rest.key() + '\x03' + Json(c.parts).dump();
  if (auto hit = case_rules_.find(key); hit != case_rules_.end()) {
    b_.call(from, hit->second, to);
    return;
  }
  uint32_t r;
  try {
    r = b_.new_rule();
    case_rules_.emplace(key, r);
    uint32_t end = b_.new_state();
    b_.set_final(end);
    DepthGuard guard(cx_);  // the case's allOf, one level above its merged node
    value(cx_.keep(norm_.all_of(rest, c.parts)), b_.rule_start(r), end);
  } catch (const Error& e) {
    std::string msg = e.what();
    if (!c.negates || msg.find("unsupported keyword 'not'") == std::string::npos) throw;
    fail("unsupported keyword 'if' (the case where it does not hold needs ", msg, ")");
  }
  b_.call(from, r, to);
}

// ------------------------------------------------------------------ leaves

void Emitter::leaf(const Json& s, const Extras& x, uint32_t from, uint32_t to) {
  std::set<std::string> types = type_set(s);
  not_ = NotInfo{};
  // With enum/const every `not` form is decided per value by the validator (enum_values).
  bool has_values = s.contains("enum") || s.contains("const");
  if (!has_values) {
    if (auto n = s.find("not"); n != s.end()) apply_not(*n, types);
    for (auto& n : x.nots) apply_not(n, types);
  }
  NotInfo nots = not_;
  for (auto& v : nots.values) {
    if (v.is_number() && (types.count("number") || types.count("integer"))) {
      fail("unsupported keyword 'not' (excluding a number)");
    }
    if ((v.is_array() && types.count("array")) || (v.is_object() && types.count("object"))) {
      fail("unsupported keyword 'not' (excluding an array or object value)");
    }
  }
  if (has_values) {
    enum_values(s, x, from, to);
    return;
  }
  bool any_type_keywords = !x.empty();
  for (auto it = s.begin(); it != s.end(); ++it)
    if (is_known_assertion(it.key())) any_type_keywords = true;
  if (types.size() == 7 && !any_type_keywords) {
    b_.call(from, any_rule(), to);
    return;
  }
  auto excluded = [&](const Json& v) {
    for (auto& e : nots.values)
      if (json_equal(e, v)) return true;
    return false;
  };
  for (auto& t : types) {
    not_ = nots;
    if (t == "null" && !excluded(Json(nullptr))) b_.literal(from, to, "null");
    if (t == "boolean") {
      if (!excluded(Json(true))) b_.literal(from, to, "true");
      if (!excluded(Json(false))) b_.literal(from, to, "false");
    }
    if (t == "integer" && !types.count("number")) number(s, from, to, true);
    if (t == "number") number(s, from, to, false, nots.non_integer);
    if (t == "string") string_value(s, x, from, to);
    if (t == "array") array(s, from, to);
    if (t == "object") object(s, from, to);
  }
}

// enum / const: each value the rest of the schema (checked by the validator, conditionals and
// `not` included) and the node's extras accept, as a literal (numbers in every spelling of
// their value: literal_value).
void Emitter::enum_values(const Json& s, const Extras& x, uint32_t from, uint32_t to) {
  Json values = s.contains("const") ? Json::array({s["const"]}) : s["enum"];
  if (!values.is_array()) fail("keyword 'enum' must be an array");
  if (s.contains("const") && s.contains("enum")) {
    Json both = Json::array();
    for (auto& v : s["enum"])
      if (json_equal(v, s["const"])) both.push_back(v);
    values = both;
  }
  Json rest = s;
  rest.erase("enum");
  rest.erase("const");
  if (!x.conditions.empty()) {  // conditionals are decided per value by the validator
    Json all = rest.contains("allOf") ? rest["allOf"] : Json::array();
    for (auto& c : x.conditions) all.push_back(c);
    rest["allOf"] = all;
  }
  // Whether the rest of the schema, the node's extras and `not`s accept v as a value.
  auto passes = [&](const Json& v) {
    if (!cx_.validator.validate_subschema(rest, v)) return false;
    for (auto& n : x.nots)
      if (cx_.validator.validate_subschema(n, v)) return false;
    if (v.is_string()) {
      auto cps = utf8_to_u32(v.get<std::string>());
      for (auto& p : x.patterns)
        if (!cx_.regex(p.get<std::string>()).matches(cps)) return false;
      for (auto& f : x.formats)
        if (f.is_string() && !check_format(f.get<std::string>(), v.get<std::string>())) return false;
    }
    return true;
  };
  std::set<std::string> seen;
  for (auto& v : values)
    if (seen.insert(value_key(v)).second) enum_value(v, passes, from, to);  // `1`, `1.0`: one value
}

void Emitter::note_keys(const Json& v) {
  if (v.is_object()) {
    std::vector<std::string> names;
    for (auto it = v.begin(); it != v.end(); ++it) {
      names.push_back(it.key());
      note_keys(it.value());
    }
    note_order(std::move(names));
  } else if (v.is_array()) {
    for (auto& e : v) note_keys(e);
  }
}

void Emitter::note_order(std::vector<std::string> names) {
  if (names.empty()) return;
  std::string key;
  for (auto& n : names) key += n + '\0';
  if (order_seen_.insert(key).second) order_.push_back(std::move(names));
}

// `not` forms the grammar can honour: {} / true (nothing valid), a type restriction, enum or
// const values (strings, booleans, null), a pattern, required names (one name, or an anyOf
// of single names: those properties are never generated). Anything else is an error.
void Emitter::apply_not(const Json& n_in, std::set<std::string>& types) {
  const Json& n = n_in.is_object() && n_in.contains("$ref") ? norm_.deref(n_in) : n_in;
  if (is_true_schema(n)) {
    types.clear();
    return;
  }
  if (is_false_schema(n)) return;
  if (!n.is_object()) fail("unsupported keyword 'not'");
  // A `not` whose schema only applies to types that cannot occur here is always satisfied.
  if (n.contains("type")) {
    bool overlap = false;
    for (auto& t : type_set(n)) {
      if (types.count(t) || (t == "number" && types.count("integer")) || (t == "integer" && types.count("number"))) {
        overlap = true;
      }
    }
    if (!overlap) return;
  }
  std::set<std::string> keys;
  for (auto it = n.begin(); it != n.end(); ++it)
    if (!annotation_keywords().count(it.key())) keys.insert(it.key());
  if (keys == std::set<std::string>{"type"}) {
    for (auto& t : type_set(n)) {
      types.erase(t);
      if (t == "number") types.erase("integer");
    }
    // Excluding integers leaves the numbers that are not integers: in draft 4 the literals with
    // a fraction or exponent (non_integer_rule); later drafts decide 1.0 by its double value,
    // which no number rule here follows (the number rule would let 2 through).
    if (types.count("number") && type_set(n).count("integer")) {
      if (!cx_.draft4) fail("unsupported keyword 'not' (numbers that are not integers)");
      not_.non_integer = true;
    }
    return;
  }
  if (keys == std::set<std::string>{"enum"} || keys == std::set<std::string>{"const"}) {
    const Json& vals = n.contains("enum") ? n["enum"] : Json::array({n["const"]});
    if (!vals.is_array()) fail("keyword 'enum' must be an array");
    for (auto& v : vals) not_.values.push_back(v);
    return;
  }
  if (keys == std::set<std::string>{"pattern"} || keys == std::set<std::string>{"pattern", "type"}) {
    if (keys.count("type") && n["type"] != "string") fail("unsupported keyword 'not'");
    not_.patterns.push_back(n["pattern"].get<std::string>());
    // A bare pattern holds for every value that is not a string, so its `not` allows strings
    // only (with type string, the other types are allowed as they are).
    if (!keys.count("type")) {
      bool str = types.count("string") > 0;
      types.clear();
      if (str) types.insert("string");
    }
    return;
  }
  // required names: only objects can lack them (for other values `required` holds vacuously).
  if (keys == std::set<std::string>{"required"} && n["required"].is_array() && n["required"].size() == 1) {
    not_.keys.insert(n["required"][0].get<std::string>());
    only_objects(types);
    return;
  }
  if (keys == std::set<std::string>{"anyOf"} && n["anyOf"].is_array()) {
    std::set<std::string> names;
    for (auto& alt : n["anyOf"]) {
      if (!(alt.is_object() && alt.size() == 1 && alt.contains("required") && alt["required"].is_array() &&
            alt["required"].size() == 1)) {
        fail("unsupported keyword 'not' (anyOf other than single required names)");
      }
      names.insert(alt["required"][0].get<std::string>());
    }
    not_.keys.insert(names.begin(), names.end());
    only_objects(types);
    return;
  }
  fail("unsupported keyword 'not' (supported: {}, type, enum, const, pattern, required names)");
}

void Emitter::only_objects(std::set<std::string>& types) {
  bool obj = types.count("object") > 0;
  types.clear();
  if (obj) types.insert("object");
}

// Any JSON value (the `true` schema).
uint32_t Emitter::any_rule() {
  if (any_ != kNone) return any_;
  any_ = b_.new_rule();
  uint32_t s = b_.rule_start(any_), e = b_.new_state();
  b_.set_final(e);
  uint32_t str = plain_string_rule();
  b_.literal(s, e, "null");
  b_.literal(s, e, "true");
  b_.literal(s, e, "false");
  b_.call(s, number_rule(false, NumberBounds{}), e);
  b_.call(s, str, e);
  std::string comma = sep_comma(cx_.options.whitespace), colon = sep_colon(cx_.options.whitespace);
  // array: [ (v (, v)*)? ]
  {
    uint32_t open = b_.new_state(), after = b_.new_state(), sep = b_.new_state();
    b_.literal(s, open, "[");
    b_.literal(open, e, "]");
    b_.call(open, any_, after);
    b_.literal(after, e, "]");
    b_.literal(after, sep, comma);
    b_.call(sep, any_, after);
  }
  // object: { (k: v (, k: v)*)? }
  {
    uint32_t open = b_.new_state(), key = b_.new_state(), colon_s = b_.new_state(), after = b_.new_state(),
             sep = b_.new_state();
    b_.literal(s, open, "{");
    b_.literal(open, e, "}");
    b_.call(open, str, key);
    b_.literal(key, colon_s, colon);
    b_.call(colon_s, any_, after);
    b_.literal(after, e, "}");
    b_.literal(after, sep, comma);
    b_.call(sep, str, key);
  }
  return any_;
}

}  // namespace ringlm::guided::schema
