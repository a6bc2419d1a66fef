#include "guided/schema_compiler.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "guided/formats.h"
#include "guided/number_regex.h"
#include "guided/ref_resolver.h"
#include "guided/regex.h"
#include "guided/validator.h"
#include "util/error.h"

namespace ringlm::guided {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
constexpr int kMaxDepth = 150;
constexpr size_t kMaxStringStates = 300'000;
constexpr int64_t kMaxCount = 5000;  // largest min/maxItems, min/maxProperties expanded

// Keywords that never restrict a value (or are handled by the keyword that owns them).
const std::unordered_set<std::string>& annotation_keywords() {
  static const std::unordered_set<std::string> k = {
      "$schema", "$id", "id", "$comment", "$defs", "definitions", "title", "description", "default",
      "examples", "example", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
      "contentSchema", "$anchor", "$vocabulary", "nullable", "discriminator", "xml", "externalDocs",
      "markdownDescription", "enumDescriptions", "x-patterns"};
  return k;
}

// Assertion keywords the compiler understands (for the "has assertions" test and merges).
bool is_known_assertion(const std::string& k) {
  static const std::unordered_set<std::string> kw = {
      "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
      "maxLength", "minLength", "pattern", "items", "additionalItems", "prefixItems", "contains", "minContains",
      "maxContains", "maxItems", "minItems", "uniqueItems", "maxProperties", "minProperties", "required",
      "properties", "patternProperties", "additionalProperties", "dependencies", "dependentRequired",
      "dependentSchemas", "propertyNames", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref",
      "format", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef", "x-patterns"};
  return kw.count(k) > 0;
}

bool has_assertions(const Json& s) {
  if (!s.is_object()) return !(s.is_boolean() && s.get<bool>());
  for (auto it = s.begin(); it != s.end(); ++it)
    if (is_known_assertion(it.key()) && it.key() != "x-patterns") return true;
    else if (it.key() == "x-patterns") return true;
  return false;
}

bool is_true_schema(const Json& s) { return (s.is_boolean() && s.get<bool>()) || (s.is_object() && !has_assertions(s)); }
bool is_false_schema(const Json& s) { return s.is_boolean() && !s.get<bool>(); }

std::set<std::string> type_set(const Json& s) {
  std::set<std::string> out;
  auto t = s.find("type");
  if (t == s.end()) return {"null", "boolean", "integer", "number", "string", "array", "object"};
  if (t->is_string()) {
    out.insert(t->get<std::string>());
  } else if (t->is_array()) {
    for (auto& x : *t)
      if (x.is_string()) out.insert(x.get<std::string>());
  } else {
    fail("keyword 'type' must be a string or an array of strings");
  }
  for (auto& x : out) {
    if (x != "null" && x != "boolean" && x != "integer" && x != "number" && x != "string" && x != "array" &&
        x != "object") {
      fail("unknown type '", x, "'");
    }
  }
  return out;
}

Json type_json(const std::set<std::string>& types) {
  Json arr = Json::array();
  for (auto& t : types) arr.push_back(t);
  return arr;
}

std::optional<double> number_kw(const Json& s, const char* k) {
  auto it = s.find(k);
  if (it == s.end()) return std::nullopt;
  if (!it->is_number()) fail("keyword '", k, "' must be a number");
  return it->get<double>();
}

int64_t count_kw(const Json& s, const char* k, int64_t dflt) {
  auto it = s.find(k);
  if (it == s.end()) return dflt;
  if (!it->is_number() || it->get<double>() < 0) fail("keyword '", k, "' must be a non-negative integer");
  double v = it->get<double>();
  if (v > 1e15) return dflt < 0 ? -1 : int64_t(1e15);
  return int64_t(std::ceil(v));
}

std::string sep_comma(Whitespace ws) { return ws == Whitespace::kPython ? ", " : ","; }
std::string sep_colon(Whitespace ws) { return ws == Whitespace::kPython ? ": " : ":"; }

void serialize_into(std::string& out, const Json& v, Whitespace ws) {
  switch (v.type()) {
    case Json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += sep_comma(ws);
        first = false;
        out.push_back('"');
        out += json_escape(it.key());
        out.push_back('"');
        out += sep_colon(ws);
        serialize_into(out, it.value(), ws);
      }
      out.push_back('}');
      break;
    }
    case Json::value_t::array: {
      out.push_back('[');
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += sep_comma(ws);
        serialize_into(out, v[i], ws);
      }
      out.push_back(']');
      break;
    }
    case Json::value_t::string:
      out.push_back('"');
      out += json_escape(v.get_ref<const std::string&>());
      out.push_back('"');
      break;
    default: out += v.dump(); break;
  }
}

class Compiler {
 public:
  Compiler(const Json& schema, const CompileOptions& options)
      : root_(schema), options_(options), validator_(schema, validator_options(schema)) {
    draft_pre2019_ = false;
    bool draft4 = false;
    if (root_.is_object()) {
      auto sv = root_.find("$schema");
      if (sv != root_.end() && sv->is_string()) {
        std::string uri = sv->get<std::string>();
        draft4 = uri.find("draft-04") != std::string::npos;
        draft_pre2019_ = uri.find("draft-0") != std::string::npos;
      }
    }
    draft4_ = draft4;
    refs_ = std::make_unique<RefResolver>(root_, draft4);
  }

  CompiledSchema run() {
    uint32_t root = rule_for(root_);
    CompiledSchema out;
    out.grammar = b_.finish(root);
    out.property_orders = order_;
    return out;
  }

 private:
  static ValidatorOptions validator_options(const Json&) {
    ValidatorOptions o;
    o.assert_formats = true;
    return o;
  }

  // ------------------------------------------------------------------ rules and values

  uint32_t rule_for(const Json& s) {
    auto it = memo_.find(&s);
    if (it != memo_.end()) return it->second;
    uint32_t r = b_.new_rule();
    memo_[&s] = r;
    uint32_t end = b_.new_state();
    b_.set_final(end);
    value(s, b_.rule_start(r), end);
    return r;
  }

  const Json& keep(Json j) {
    arena_.push_back(std::move(j));
    return arena_.back();
  }

  const Json& deref(const Json& s) {
    const Json* cur = &s;
    for (int hops = 0; hops < 64; ++hops) {
      if (!cur->is_object()) return *cur;
      auto r = cur->find("$ref");
      if (r == cur->end()) return *cur;
      if (!r->is_string()) fail("keyword '$ref' must be a string");
      bool siblings = false;
      for (auto it = cur->begin(); it != cur->end(); ++it)
        if (it.key() != "$ref" && is_known_assertion(it.key())) siblings = true;
      if (siblings && !draft_pre2019_) return *cur;
      const Json* target = refs_->resolve(r->get<std::string>());
      if (!target) fail("unresolvable $ref '", r->get<std::string>(), "'");
      cur = target;
    }
    fail("$ref chain longer than 64 hops");
  }

  struct DepthGuard {
    explicit DepthGuard(int& d) : d_(d) {
      if (++d_ > kMaxDepth) fail("schema nesting deeper than ", kMaxDepth, " levels (recursion through allOf/anyOf?)");
    }
    ~DepthGuard() { --d_; }
    int& d_;
  };

  // Emits every serialisation of a value valid under `s` between `from` and `to`.
  void value(const Json& s_in, uint32_t from, uint32_t to) {
    DepthGuard guard(depth_);
    if (s_in.is_boolean()) {
      if (s_in.get<bool>()) b_.call(from, any_rule(), to);
      return;  // false: no path
    }
    if (!s_in.is_object()) fail("a schema must be an object or a boolean, got ", s_in.dump().substr(0, 40));

    // $ref: alone -> call the target's rule (memoised: recursion works); with siblings (2019+)
    // -> allOf of the two.
    if (auto r = s_in.find("$ref"); r != s_in.end()) {
      const Json& d = deref(s_in);
      if (&d != &s_in) {
        if (d.is_object() && d.contains("$ref")) {
          value(d, from, to);
        } else {
          b_.call(from, rule_for(d), to);
        }
        return;
      }
      // $ref with assertion siblings: allOf [target, siblings].
      const Json* target = refs_->resolve(r->get<std::string>());
      if (!target) fail("unresolvable $ref '", r->get<std::string>(), "'");
      Json rest = s_in;
      rest.erase("$ref");
      Json all = Json::array();
      if (auto a = rest.find("allOf"); a != rest.end()) all = *a;
      all.push_back(*target);
      rest["allOf"] = all;
      value(keep(std::move(rest)), from, to);
      return;
    }

    const Json& s = s_in;
    auto any_of = s.find("anyOf");
    auto one_of = s.find("oneOf");
    if (any_of != s.end() || one_of != s.end()) {
      Json rest = s;
      Json alts;
      if (any_of != s.end() && one_of != s.end()) {
        // Both: the oneOf goes into an allOf, distributed after the anyOf.
        alts = *any_of;
        rest.erase("anyOf");
        Json all = rest.contains("allOf") ? rest["allOf"] : Json::array();
        all.push_back(Json{{"anyOf", *one_of}});
        rest.erase("oneOf");
        rest["allOf"] = all;
      } else {
        alts = any_of != s.end() ? *any_of : *one_of;
        rest.erase(any_of != s.end() ? "anyOf" : "oneOf");
      }
      if (!alts.is_array() || alts.empty()) fail("anyOf/oneOf must be a non-empty array");
      bool plain = !has_assertions(rest);
      for (size_t i = 0; i < alts.size(); ++i) {
        const Json& alt = (any_of != s.end() ? *any_of : *one_of)[i];
        if (plain) {
          b_.call(from, rule_for(alt), to);
        } else {
          Json merged = merge(rest, deref_for_merge(alt));
          uint32_t r = b_.new_rule();
          uint32_t end = b_.new_state();
          b_.set_final(end);
          value(keep(std::move(merged)), b_.rule_start(r), end);
          b_.call(from, r, to);
        }
      }
      return;
    }

    if (auto all = s.find("allOf"); all != s.end()) {
      if (!all->is_array()) fail("allOf must be an array");
      Json merged = s;
      merged.erase("allOf");
      for (auto& m : *all) merged = merge(merged, deref_for_merge(m));
      value(keep(std::move(merged)), from, to);
      return;
    }

    leaf(s, from, to);
  }

  // A member of allOf/anyOf ready for merging: $ref replaced by allOf [target].
  Json deref_for_merge(const Json& m) {
    if (m.is_boolean()) return m.get<bool>() ? Json::object() : Json(false);
    if (!m.is_object()) fail("a schema must be an object or a boolean");
    const Json& d = deref(m);
    if (!d.is_object()) return d.is_boolean() && !d.get<bool>() ? Json(false) : Json::object();
    if (d.contains("$ref")) {
      Json out = d;
      const Json* target = refs_->resolve(d["$ref"].get<std::string>());
      if (!target) fail("unresolvable $ref '", d["$ref"].get<std::string>(), "'");
      out.erase("$ref");
      Json all = out.contains("allOf") ? out["allOf"] : Json::array();
      all.push_back(*target);
      out["allOf"] = all;
      return out;
    }
    return d;
  }

  // ------------------------------------------------------------------ allOf merging

  static Json all_of2(const Json& a, const Json& b) {
    if (is_false_schema(a) || is_false_schema(b)) return false;
    if (is_true_schema(a)) return b;
    if (is_true_schema(b)) return a;
    return Json{{"allOf", Json::array({a, b})}};
  }

  Json merge(const Json& a_in, const Json& b_in) {
    if (is_false_schema(a_in) || is_false_schema(b_in)) return Json{{"not", Json::object()}};
    Json a = a_in.is_object() ? a_in : Json::object();
    const Json b = b_in.is_object() ? b_in : Json::object();
    // Object keywords first (they interact).
    bool a_obj = a.contains("properties") || a.contains("additionalProperties") || a.contains("patternProperties");
    bool b_obj = b.contains("properties") || b.contains("additionalProperties") || b.contains("patternProperties");
    if (a_obj && b_obj) {
      if (a.contains("patternProperties") || b.contains("patternProperties")) {
        fail("unsupported keyword 'patternProperties' combined with properties inside allOf");
      }
      Json pa = a.value("properties", Json::object()), pb = b.value("properties", Json::object());
      Json adda = a.contains("additionalProperties") ? a["additionalProperties"] : Json(true);
      Json addb = b.contains("additionalProperties") ? b["additionalProperties"] : Json(true);
      Json props = Json::object();
      for (auto it = pa.begin(); it != pa.end(); ++it) {
        props[it.key()] = all_of2(it.value(), pb.contains(it.key()) ? pb[it.key()] : addb);
      }
      for (auto it = pb.begin(); it != pb.end(); ++it) {
        if (!pa.contains(it.key())) props[it.key()] = all_of2(adda, it.value());
      }
      a["properties"] = props;
      Json add = all_of2(adda, addb);
      if (is_true_schema(add)) {
        a.erase("additionalProperties");
      } else {
        a["additionalProperties"] = add;
      }
    } else if (b_obj) {
      for (const char* k : {"properties", "additionalProperties", "patternProperties"})
        if (b.contains(k)) a[k] = b[k];
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      const std::string& k = it.key();
      const Json& v = it.value();
      if (k == "properties" || k == "additionalProperties" || k == "patternProperties") continue;
      if (annotation_keywords().count(k) && k != "x-patterns") continue;
      if (!a.contains(k)) {
        a[k] = v;
        continue;
      }
      Json& cur = a[k];
      if (k == "type") {
        auto ta = type_set(a), tb = type_set(b);
        std::set<std::string> out;
        for (auto& t : ta) {
          if (tb.count(t)) out.insert(t);
          else if (t == "number" && tb.count("integer")) out.insert("integer");
          else if (t == "integer" && tb.count("number")) out.insert("integer");
        }
        cur = type_json(out);
      } else if (k == "required") {
        for (auto& x : v)
          if (std::find(cur.begin(), cur.end(), x) == cur.end()) cur.push_back(x);
      } else if (k == "enum" || k == "const") {
        Json va = k == "enum" ? cur : Json::array({cur});
        Json vb = k == "enum" ? v : Json::array({v});
        Json out = Json::array();
        for (auto& x : va)
          for (auto& y : vb)
            if (json_equal(x, y)) {
              out.push_back(x);
              break;
            }
        a.erase(k);
        if (a.contains("enum") && k != "enum") {
          Json out2 = Json::array();
          for (auto& x : a["enum"])
            for (auto& y : out)
              if (json_equal(x, y)) out2.push_back(x);
          out = out2;
        }
        a["enum"] = out;
      } else if (k == "minimum" || k == "minLength" || k == "minItems" || k == "minProperties") {
        if (!v.is_number() || !cur.is_number()) fail("keyword '", k, "' must be a number");
        if (v.get<double>() > cur.get<double>()) cur = v;
      } else if (k == "maximum" || k == "maxLength" || k == "maxItems" || k == "maxProperties") {
        if (!v.is_number() || !cur.is_number()) fail("keyword '", k, "' must be a number");
        if (v.get<double>() < cur.get<double>()) cur = v;
      } else if (k == "exclusiveMinimum" || k == "exclusiveMaximum") {
        if (!v.is_number() || !cur.is_number()) fail("unsupported keyword '", k, "' (boolean form) inside allOf");
        bool take = k == "exclusiveMinimum" ? v.get<double>() > cur.get<double>() : v.get<double>() < cur.get<double>();
        if (take) cur = v;
      } else if (k == "pattern") {
        Json pats = a.contains("x-patterns") ? a["x-patterns"] : Json::array();
        pats.push_back(v);
        a["x-patterns"] = pats;
      } else if (k == "x-patterns") {
        for (auto& p : v) cur.push_back(p);
      } else if (k == "format") {
        if (cur != v) {
          Json pats = a.contains("x-formats") ? a["x-formats"] : Json::array();
          pats.push_back(v);
          a["x-formats"] = pats;
        }
      } else if (k == "items" || k == "additionalItems" || k == "propertyNames" || k == "contains" ||
                 k == "unevaluatedProperties" || k == "unevaluatedItems") {
        if (cur.is_array() || v.is_array()) fail("unsupported keyword '", k, "' (tuple form) in both allOf branches");
        cur = all_of2(cur, v);
      } else if (k == "allOf") {
        for (auto& x : v) cur.push_back(x);
      } else if (k == "anyOf" || k == "oneOf" || k == "not") {
        Json all = a.contains("allOf") ? a["allOf"] : Json::array();
        all.push_back(Json{{k, v}});
        a["allOf"] = all;
      } else if (k == "uniqueItems") {
        cur = cur.is_boolean() && v.is_boolean() ? Json(cur.get<bool>() || v.get<bool>()) : v;
      } else if (cur != v) {
        fail("unsupported keyword '", k, "' with different values inside allOf");
      }
    }
    return a;
  }

  // ------------------------------------------------------------------ leaves

  void leaf(const Json& s, uint32_t from, uint32_t to) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (k == "if" || k == "then" || k == "else" || k == "dependentSchemas" || k == "unevaluatedProperties" ||
          k == "unevaluatedItems" || k == "$dynamicRef" || k == "$recursiveRef") {
        if (k == "then" || k == "else") {
          if (!s.contains("if")) continue;  // without "if" they do nothing
        }
        if ((k == "unevaluatedProperties" || k == "unevaluatedItems") && is_true_schema(it.value())) continue;
        fail("unsupported keyword '", k, "'");
      }
    }
    std::set<std::string> types = type_set(s);
    if (auto n = s.find("not"); n != s.end()) apply_not(*n, types);

    if (s.contains("enum") || s.contains("const")) {
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
      rest.erase("x-formats");
      rest.erase("x-patterns");
      std::vector<std::string> pats;
      if (s.contains("x-patterns"))
        for (auto& p : s["x-patterns"]) pats.push_back(p.get<std::string>());
      std::set<std::string> seen;
      for (auto& v : values) {
        if (!validator_.validate_subschema(rest, v)) continue;
        if (v.is_string()) {
          bool ok = true;
          auto cps = utf8_to_u32(v.get<std::string>());
          for (auto& p : pats)
            if (!regex_cached(p).matches(cps)) ok = false;
          if (s.contains("x-formats"))
            for (auto& f : s["x-formats"])
              if (f.is_string() && !check_format(f.get<std::string>(), v.get<std::string>())) ok = false;
          if (!ok) continue;
        }
        std::string text = serialize_json(v, options_.whitespace);
        if (!seen.insert(text).second) continue;
        note_keys(v);
        b_.literal(from, to, text);
      }
      return;
    }

    bool any_type_keywords = false;
    for (auto it = s.begin(); it != s.end(); ++it)
      if (is_known_assertion(it.key()) && it.key() != "not") any_type_keywords = true;
    if (types.size() == 7 && !any_type_keywords) {
      b_.call(from, any_rule(), to);
      return;
    }
    for (auto& t : types) {
      if (t == "null") b_.literal(from, to, "null");
      if (t == "boolean") {
        b_.literal(from, to, "true");
        b_.literal(from, to, "false");
      }
      if (t == "integer" && !types.count("number")) number(s, from, to, true);
      if (t == "number") number(s, from, to, false);
      if (t == "string") string_value(s, from, to);
      if (t == "array") array(s, from, to);
      if (t == "object") object(s, from, to);
    }
  }

  void note_keys(const Json& v) {
    if (v.is_object()) {
      std::vector<std::string> names;
      for (auto it = v.begin(); it != v.end(); ++it) {
        names.push_back(it.key());
        note_keys(it.value());
      }
      note_order(std::move(names));
    } else if (v.is_array()) {
      for (auto& x : v) note_keys(x);
    }
  }

  void note_order(std::vector<std::string> names) {
    if (names.empty()) return;
    std::string key;
    for (auto& n : names) key += n + '\0';
    if (order_seen_.insert(key).second) order_.push_back(std::move(names));
  }

  // `not` forms the grammar can honour: a type restriction, required properties (a single
  // name: that property is never generated), enum/const of scalars (handled by the value
  // filter below), or {} (nothing valid).
  void apply_not(const Json& n, std::set<std::string>& types) {
    if (is_true_schema(n)) {
      types.clear();
      return;
    }
    if (n.is_object() && n.size() == 1 && n.contains("type")) {
      for (auto& t : type_set(n)) {
        types.erase(t);
        if (t == "number") types.erase("integer");
      }
      return;
    }
    if (n.is_object() && n.size() == 1 && n.contains("required") && n["required"].is_array() && n["required"].size() == 1) {
      return;  // handled by object(): the property is excluded
    }
    fail("unsupported keyword 'not' (only type, a single required name, or {} are supported)");
  }

  // ------------------------------------------------------------------ shared rules

  uint32_t any_rule() {
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
    std::string comma = sep_comma(options_.whitespace), colon = sep_colon(options_.whitespace);
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

  uint32_t plain_string_rule() {
    if (plain_string_ != kNone) return plain_string_;
    plain_string_ = string_rule(dfa_universal(), 0, -1);
    return plain_string_;
  }

  const CpDfa& regex_cached(const std::string& pattern) {
    auto it = regex_cache_.find(pattern);
    if (it == regex_cache_.end()) it = regex_cache_.emplace(pattern, compile_regex(pattern, true)).first;
    return it->second;
  }

  // ------------------------------------------------------------------ numbers

  uint32_t number_rule(bool integer, const NumberBounds& nb) {
    std::string re;
    bool bounded = nb.lower || nb.upper;
    if (integer) {
      re = bounded ? integer_regex(nb) : "^-?(?:0|[1-9][0-9]*)$";
    } else {
      re = bounded ? number_regex(nb) : "^-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$";
    }
    auto it = number_rules_.find(re);
    if (it != number_rules_.end()) return it->second;
    uint32_t r = b_.new_rule();
    number_rules_[re] = r;
    uint32_t end = b_.new_state();
    b_.set_final(end);
    if (!re.empty()) emit_ascii_dfa(compile_regex(re, false), b_.rule_start(r), end);
    return r;
  }

  // Emits a DFA over ASCII code points as raw bytes.
  void emit_ascii_dfa(const CpDfa& dfa, uint32_t from, uint32_t to) {
    if (dfa.states.empty()) return;
    std::vector<uint32_t> st(dfa.states.size());
    st[0] = from;
    for (size_t i = 1; i < st.size(); ++i) st[i] = b_.new_state();
    for (size_t i = 0; i < dfa.states.size(); ++i) {
      for (auto& e : dfa.states[i].edges) {
        CharSet cs = CharSet::range(e.lo, e.hi);
        b_.utf8_chars(st[i], st[e.to], cs);
      }
      if (dfa.states[i].accept) b_.eps(st[i], to);
    }
  }

  void number(const Json& s, uint32_t from, uint32_t to, bool integer) {
    NumberBounds nb;
    auto min = number_kw(s, "minimum"), max = number_kw(s, "maximum");
    auto exmin_it = s.find("exclusiveMinimum"), exmax_it = s.find("exclusiveMaximum");
    nb.lower = min;
    nb.upper = max;
    if (exmin_it != s.end()) {
      if (exmin_it->is_boolean()) {
        nb.lower_exclusive = exmin_it->get<bool>() && min;
      } else if (exmin_it->is_number()) {
        double v = exmin_it->get<double>();
        if (!nb.lower || v >= *nb.lower) nb.lower = v, nb.lower_exclusive = true;
      }
    }
    if (exmax_it != s.end()) {
      if (exmax_it->is_boolean()) {
        nb.upper_exclusive = exmax_it->get<bool>() && max;
      } else if (exmax_it->is_number()) {
        double v = exmax_it->get<double>();
        if (!nb.upper || v <= *nb.upper) nb.upper = v, nb.upper_exclusive = true;
      }
    }
    if (auto m = s.find("multipleOf"); m != s.end()) {
      if (!m->is_number() || m->get<double>() <= 0) fail("keyword 'multipleOf' must be a positive number");
      double k = m->get<double>();
      if (integer && std::floor(k) == k && k == 1) {
        // every integer
      } else if (!integer && k == 1 && false) {
      } else if (integer && std::floor(k) == k && k <= 1000 && !nb.lower && !nb.upper) {
        b_.call(from, multiple_rule(int64_t(k)), to);
        return;
      } else {
        fail("unsupported keyword 'multipleOf' (", k, ")");
      }
    }
    b_.call(from, number_rule(integer, nb), to);
  }

  // Integers that are multiples of k: a remainder automaton over the decimal digits.
  uint32_t multiple_rule(int64_t k) {
    uint32_t r = b_.new_rule();
    uint32_t s = b_.rule_start(r), e = b_.new_state();
    b_.set_final(e);
    uint32_t sign = b_.new_state();
    b_.eps(s, sign);
    b_.literal(s, sign, "-");
    b_.literal(sign, e, "0");
    std::vector<uint32_t> rem(static_cast<size_t>(k));
    for (auto& x : rem) x = b_.new_state();
    for (int d = 1; d <= 9; ++d) b_.bytes(sign, rem[size_t(d % k)], uint8_t('0' + d), uint8_t('0' + d));
    for (int64_t q = 0; q < k; ++q)
      for (int d = 0; d <= 9; ++d) b_.bytes(rem[size_t(q)], rem[size_t((q * 10 + d) % k)], uint8_t('0' + d), uint8_t('0' + d));
    b_.eps(rem[0], e);
    return r;
  }

  // ------------------------------------------------------------------ strings

  CpDfa string_dfa(const Json& s, int64_t* min_len, int64_t* max_len) {
    CpDfa dfa = dfa_universal();
    std::vector<std::string> patterns;
    if (auto p = s.find("pattern"); p != s.end()) {
      if (!p->is_string()) fail("keyword 'pattern' must be a string");
      patterns.push_back(p->get<std::string>());
    }
    if (auto p = s.find("x-patterns"); p != s.end())
      for (auto& x : *p) patterns.push_back(x.get<std::string>());
    for (auto& p : patterns) {
      try {
        dfa = dfa_intersect(dfa, regex_cached(p));
      } catch (const Error& e) {
        fail("unsupported keyword 'pattern': ", e.what());
      }
    }
    std::vector<std::string> formats;
    if (auto f = s.find("format"); f != s.end() && f->is_string()) formats.push_back(f->get<std::string>());
    if (auto f = s.find("x-formats"); f != s.end())
      for (auto& x : *f)
        if (x.is_string()) formats.push_back(x.get<std::string>());
    for (auto& f : formats) {
      auto re = format_regex(f);
      if (re) {
        dfa = dfa_intersect(dfa, regex_cached(*re));
      } else if (is_checked_format(f)) {
        fail("unsupported keyword 'format' value '", f, "'");
      }
    }
    *min_len = count_kw(s, "minLength", 0);
    *max_len = count_kw(s, "maxLength", -1);
    return dfa;
  }

  void string_value(const Json& s, uint32_t from, uint32_t to) {
    int64_t mn, mx;
    CpDfa dfa = string_dfa(s, &mn, &mx);
    if (dfa.accepts_everything() && mn == 0 && mx < 0) {
      b_.call(from, plain_string_rule(), to);
      return;
    }
    b_.call(from, string_rule(dfa, mn, mx), to);
  }

  // A rule for `"body"` whose decoded body is in dfa with length (code points) in [mn, mx].
  uint32_t string_rule(const CpDfa& dfa, int64_t mn, int64_t mx) {
    uint32_t r = b_.new_rule();
    uint32_t s = b_.rule_start(r), e = b_.new_state();
    b_.set_final(e);
    uint32_t body = b_.new_state();
    b_.literal(s, body, "\"");
    string_body(dfa, mn, mx, body, e);
    return r;
  }

  // Body states from `start` (after the opening quote) to `to` (after the closing quote).
  void string_body(const CpDfa& dfa, int64_t mn, int64_t mx, uint32_t start, uint32_t to) {
    if (dfa.states.empty() || (mx >= 0 && mn > mx)) return;
    // A universal sink (accepting, every code point loops back) admits the plain-token fast path.
    std::vector<char> sink(dfa.states.size(), 0);
    for (size_t d = 0; d < dfa.states.size(); ++d) {
      const auto& st = dfa.states[d];
      sink[d] = st.accept && st.edges.size() == 1 && st.edges[0].lo == 0 && st.edges[0].hi == kMaxCodePoint &&
                st.edges[0].to == int(d);
    }
    int64_t cap = mx >= 0 ? mx : mn;  // counts saturate at cap when unbounded
    if (cap > 100000) fail("minLength/maxLength above 100000 is not supported");
    std::map<std::pair<int64_t, int>, uint32_t> ids;
    std::vector<std::pair<int64_t, int>> work;
    auto get = [&](int64_t k, int d) {
      auto [it, inserted] = ids.emplace(std::make_pair(k, d), 0);
      if (inserted) {
        if (ids.size() > kMaxStringStates) fail("string constraints (pattern x length) are too large");
        it->second = work.empty() ? start : b_.new_state();
        work.emplace_back(k, d);
      }
      return it->second;
    };
    get(0, 0);
    for (size_t w = 0; w < work.size(); ++w) {
      auto [k, d] = work[w];
      uint32_t st = ids[{k, d}];
      if (dfa.states[d].accept && k >= mn) b_.literal(st, to, "\"");
      if (sink[size_t(d)]) b_.set_plain(st, mx >= 0 ? int32_t(std::min<int64_t>(mx - k, INT32_MAX)) : Grammar::kPlainUnbounded);
      if (mx >= 0 && k >= mx) continue;
      int64_t nk = mx >= 0 ? k + 1 : std::min(k + 1, cap);
      // Group edges by target so each target gets one json_chars call.
      std::map<int, CharSet> by_target;
      for (auto& e : dfa.states[d].edges) by_target[e.to].add(e.lo, e.hi);
      for (auto& [t, cs] : by_target) {
        uint32_t next = get(nk, t);
        b_.json_chars(st, next, cs);
      }
    }
  }

  // ------------------------------------------------------------------ arrays

  void array(const Json& s, uint32_t from, uint32_t to) {
    if (auto u = s.find("uniqueItems"); u != s.end() && u->is_boolean() && u->get<bool>()) {
      if (count_kw(s, "maxItems", -1) < 0 || count_kw(s, "maxItems", -1) > 1) fail("unsupported keyword 'uniqueItems'");
    }
    if (s.contains("contains")) fail("unsupported keyword 'contains'");
    std::vector<const Json*> prefix;
    const Json* rest = nullptr;
    static const Json kTrue = true;
    auto items = s.find("items");
    if (auto p = s.find("prefixItems"); p != s.end()) {
      if (!p->is_array()) fail("keyword 'prefixItems' must be an array");
      for (auto& x : *p) prefix.push_back(&x);
      rest = items != s.end() ? &*items : &kTrue;
    } else if (items != s.end() && items->is_array()) {
      for (auto& x : *items) prefix.push_back(&x);
      auto add = s.find("additionalItems");
      rest = add != s.end() ? &*add : &kTrue;
    } else {
      rest = items != s.end() ? &*items : &kTrue;
    }
    bool rest_allowed = !is_false_schema(*rest);
    int64_t mn = count_kw(s, "minItems", 0), mx = count_kw(s, "maxItems", -1);
    if (!rest_allowed) mx = mx < 0 ? int64_t(prefix.size()) : std::min<int64_t>(mx, int64_t(prefix.size()));
    if (mx >= 0 && mn > mx) return;
    // States after 0..last elements; with no maxItems the last one (>= 1, so it is past the first
    // element and needs commas) loops.
    int64_t last = std::max<int64_t>({int64_t(prefix.size()), mn, 1});
    if (mx >= 0) last = mx;
    if (last > kMaxCount) fail("minItems/maxItems above ", kMaxCount, " are not supported");
    std::string comma = sep_comma(options_.whitespace);
    uint32_t open = b_.new_state();
    b_.literal(from, open, "[");
    std::vector<uint32_t> after(size_t(last) + 1);
    after[0] = open;
    for (size_t i = 1; i < after.size(); ++i) after[i] = b_.new_state();
    auto elem_rule = [&](int64_t i) -> uint32_t {
      const Json& sch = size_t(i) < prefix.size() ? *prefix[size_t(i)] : *rest;
      return rule_for(sch);
    };
    for (int64_t i = 0; i <= last; ++i) {
      uint32_t st = after[size_t(i)];
      if (i >= mn) b_.literal(st, to, "]");
      bool can_add = (mx < 0 || i < mx) && (size_t(i) < prefix.size() || rest_allowed);
      if (!can_add) continue;
      const Json& sch = size_t(i) < prefix.size() ? *prefix[size_t(i)] : *rest;
      if (is_false_schema(sch)) continue;
      uint32_t target = i < last ? after[size_t(i) + 1] : st;  // unbounded: loop at the last state
      uint32_t start = st;
      if (i > 0) {
        start = b_.new_state();
        b_.literal(st, start, comma);
      }
      b_.call(start, elem_rule(i), target);
    }
  }

  // ------------------------------------------------------------------ objects

  struct Entry {
    std::string name;
    const Json* schema;
    bool required;
  };

  void object(const Json& s, uint32_t from, uint32_t to) {
    static const Json kTrue = true;
    static const Json kFalse = false;
    const Json* props = nullptr;
    if (auto p = s.find("properties"); p != s.end()) {
      if (!p->is_object()) fail("keyword 'properties' must be an object");
      props = &*p;
    }
    const Json* add = &kTrue;
    if (auto a = s.find("additionalProperties"); a != s.end()) add = &*a;
    std::vector<std::pair<std::string, const Json*>> patterns;
    if (auto pp = s.find("patternProperties"); pp != s.end()) {
      if (!pp->is_object()) fail("keyword 'patternProperties' must be an object");
      for (auto it = pp->begin(); it != pp->end(); ++it) patterns.emplace_back(it.key(), &it.value());
    }
    std::set<std::string> required;
    if (auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) fail("keyword 'required' must be an array");
      for (auto& x : *r) {
        if (!x.is_string()) fail("keyword 'required' must list strings");
        required.insert(x.get<std::string>());
      }
    }
    std::set<std::string> forbidden;
    if (auto n = s.find("not"); n != s.end() && n->is_object() && n->contains("required")) {
      forbidden.insert((*n)["required"][0].get<std::string>());
    }
    const Json* names = nullptr;
    if (auto pn = s.find("propertyNames"); pn != s.end()) names = &*pn;

    // Declared entries: properties in order, then required names not in properties.
    std::vector<Entry> entries;
    auto schema_for = [&](const std::string& name, const Json* declared) -> const Json* {
      std::vector<const Json*> parts;
      if (declared) parts.push_back(declared);
      auto k32 = utf8_to_u32(name);
      for (auto& [p, sch] : patterns) {
        if (pattern_dfa(p).matches(k32)) parts.push_back(sch);
      }
      if (parts.empty()) parts.push_back(add);
      if (parts.size() == 1) return parts[0];
      Json all = Json::array();
      for (auto* x : parts) all.push_back(*x);
      return &keep(Json{{"allOf", all}});
    };
    auto name_ok = [&](const std::string& name) {
      if (forbidden.count(name)) return false;
      return !names || validator_.validate_subschema(*names, Json(name));
    };
    if (props) {
      for (auto it = props->begin(); it != props->end(); ++it) {
        const Json* sch = schema_for(it.key(), &it.value());
        bool req = required.count(it.key()) > 0;
        if (!name_ok(it.key()) || is_false_schema(*sch)) {
          if (req) return;  // unsatisfiable
          continue;
        }
        entries.push_back({it.key(), sch, req});
      }
    }
    for (auto& r : required) {
      if (props && props->contains(r)) continue;
      const Json* sch = schema_for(r, nullptr);
      if (!name_ok(r) || is_false_schema(*sch)) return;
      entries.push_back({r, sch, true});
    }
    {
      std::vector<std::string> names;
      for (auto& e : entries) names.push_back(e.name);
      note_order(std::move(names));
    }

    // Dependencies that the fixed order cannot track are rejected unless trivially satisfied.
    for (const char* kw : {"dependentRequired", "dependencies"}) {
      auto d = s.find(kw);
      if (d == s.end()) continue;
      for (auto it = d->begin(); it != d->end(); ++it) {
        bool present_possible = false;
        for (auto& e : entries)
          if (e.name == it.key()) present_possible = true;
        if (!present_possible && is_false_schema(*add) && patterns.empty()) continue;
        if (!it.value().is_array()) fail("unsupported keyword '", kw, "' (schema form)");
        for (auto& dep : it.value())
          if (!required.count(dep.get<std::string>())) fail("unsupported keyword '", kw, "'");
      }
    }

    // Additional entries: keys not declared; per pattern, and the rest for additionalProperties.
    struct Extra {
      CpDfa keys;
      const Json* schema;
    };
    std::vector<Extra> extras;
    {
      std::vector<std::u32string> declared;
      for (auto& e : entries) declared.push_back(utf8_to_u32(e.name));
      for (auto& f : forbidden) declared.push_back(utf8_to_u32(f));
      if (props)
        for (auto it = props->begin(); it != props->end(); ++it) declared.push_back(utf8_to_u32(it.key()));
      for (auto& r : required) declared.push_back(utf8_to_u32(r));
      CpDfa not_declared = dfa_complement(dfa_literals(declared));
      CpDfa name_dfa = dfa_universal();
      int64_t name_min = 0, name_max = -1;
      if (names) name_dfa = names_dfa(*names, &name_min, &name_max);
      CpDfa any_pattern;
      bool have_any_pattern = false;
      for (auto& [p, sch] : patterns) {
        CpDfa k = dfa_intersect(dfa_intersect(pattern_dfa(p), not_declared), name_dfa);
        for (auto& other : extras) {
          if (!dfa_intersect(other.keys, k).is_empty_language()) fail("unsupported keyword 'patternProperties' (overlapping patterns)");
        }
        any_pattern = have_any_pattern ? dfa_union(any_pattern, pattern_dfa(p)) : pattern_dfa(p);
        have_any_pattern = true;
        if (!k.is_empty_language() && !is_false_schema(*sch)) extras.push_back({std::move(k), sch});
      }
      if (!is_false_schema(*add)) {
        CpDfa k = dfa_intersect(not_declared, name_dfa);
        if (have_any_pattern) k = dfa_intersect(k, dfa_complement(any_pattern));
        if (!k.is_empty_language()) extras.push_back({std::move(k), add});
      }
      extra_min_ = name_min;
      extra_max_ = name_max;
    }

    int64_t min_p = count_kw(s, "minProperties", 0), max_p = count_kw(s, "maxProperties", -1);
    if (max_p >= 0 && min_p > max_p) return;
    int64_t n_required = 0;
    for (auto& e : entries) n_required += e.required;
    if (max_p >= 0 && n_required > max_p) return;
    int64_t cap = std::max<int64_t>(1, max_p >= 0 ? max_p : min_p);
    if (cap > kMaxCount) fail("minProperties/maxProperties above ", kMaxCount, " are not supported");

    std::string comma = sep_comma(options_.whitespace), colon = sep_colon(options_.whitespace);
    size_t n = entries.size();
    // state(i, k): before entry i (i == n: the additional phase) with k entries emitted (k saturates
    // at cap when maxProperties is unbounded; k > 0 means the next entry needs a comma).
    std::map<std::pair<size_t, int64_t>, uint32_t> ids;
    std::vector<std::pair<size_t, int64_t>> work;
    uint32_t open = b_.new_state();
    b_.literal(from, open, "{");
    auto get = [&](size_t i, int64_t k) {
      auto [it, inserted] = ids.emplace(std::make_pair(i, k), 0);
      if (inserted) {
        it->second = work.empty() ? open : b_.new_state();
        work.emplace_back(i, k);
      }
      return it->second;
    };
    get(0, 0);
    auto next_count = [&](int64_t k) { return max_p >= 0 ? k + 1 : std::min(k + 1, cap); };
    std::vector<uint32_t> extra_key_rules;
    for (auto& x : extras) extra_key_rules.push_back(key_rule(x.keys));
    for (size_t w = 0; w < work.size(); ++w) {
      auto [i, k] = work[w];
      uint32_t st = ids[{i, k}];
      bool can_add = max_p < 0 || k < max_p;
      if (i < n) {
        const Entry& e = entries[i];
        if (!e.required) b_.eps(st, get(i + 1, k));
        if (can_add) {
          std::string key = (k > 0 ? comma : "") + "\"" + json_escape(e.name) + "\"" + colon;
          uint32_t after_key = b_.new_state();
          b_.literal(st, after_key, key);
          b_.call(after_key, rule_for(*e.schema), get(i + 1, next_count(k)));
        }
      } else {
        if (k >= min_p) b_.literal(st, to, "}");
        if (!can_add) continue;
        for (size_t x = 0; x < extras.size(); ++x) {
          uint32_t key_start = st;
          if (k > 0) {
            key_start = b_.new_state();
            b_.literal(st, key_start, comma);
          }
          uint32_t after_key = b_.new_state(), after_colon = b_.new_state();
          b_.call(key_start, extra_key_rules[x], after_key);
          b_.literal(after_key, after_colon, colon);
          b_.call(after_colon, rule_for(*extras[x].schema), get(n, next_count(k)));
        }
      }
    }
  }

  uint32_t key_rule(const CpDfa& keys) {
    if (keys.accepts_everything() && extra_min_ == 0 && extra_max_ < 0) return plain_string_rule();
    return string_rule(keys, extra_min_, extra_max_);
  }

  const CpDfa& pattern_dfa(const std::string& p) {
    try {
      return regex_cached(p);
    } catch (const Error& e) {
      fail("unsupported keyword 'patternProperties': ", e.what());
    }
  }

  CpDfa names_dfa(const Json& pn, int64_t* mn, int64_t* mx) {
    if (is_true_schema(pn)) {
      *mn = 0, *mx = -1;
      return dfa_universal();
    }
    if (!pn.is_object()) fail("unsupported keyword 'propertyNames'");
    for (auto it = pn.begin(); it != pn.end(); ++it) {
      const std::string& k = it.key();
      if (annotation_keywords().count(k) || k == "pattern" || k == "minLength" || k == "maxLength" || k == "format") {
        continue;
      }
      if (k == "type" && it.value() == "string") continue;
      fail("unsupported keyword 'propertyNames' (only pattern/minLength/maxLength/format)");
    }
    return string_dfa(pn, mn, mx);
  }

  Json root_;
  CompileOptions options_;
  Validator validator_;
  std::unique_ptr<RefResolver> refs_;
  bool draft_pre2019_ = false;
  bool draft4_ = false;
  GrammarBuilder b_;
  std::unordered_map<const Json*, uint32_t> memo_;
  std::deque<Json> arena_;
  std::unordered_map<std::string, CpDfa> regex_cache_;
  std::unordered_map<std::string, uint32_t> number_rules_;
  uint32_t any_ = kNone, plain_string_ = kNone;
  int depth_ = 0;
  int64_t extra_min_ = 0, extra_max_ = -1;
  std::vector<std::vector<std::string>> order_;
  std::unordered_set<std::string> order_seen_;
};

}  // namespace

CompiledSchema compile_schema(const Json& schema, const CompileOptions& options) {
  Compiler c(schema, options);
  return c.run();
}

std::string serialize_json(const Json& value, Whitespace ws) {
  std::string out;
  serialize_into(out, value, ws);
  return out;
}

namespace {

// The declared-order list that covers most of the object's keys (ties: the shorter list).
const std::vector<std::string>* best_order(const Json& obj, const std::vector<std::vector<std::string>>& orders) {
  const std::vector<std::string>* best = nullptr;
  size_t best_hits = 0, best_size = 0;
  for (auto& o : orders) {
    size_t hits = 0;
    for (auto& n : o) hits += obj.contains(n);
    if (hits > best_hits || (hits == best_hits && hits > 0 && o.size() < best_size)) {
      best = &o, best_hits = hits, best_size = o.size();
    }
  }
  return best;
}

}  // namespace

Json reorder_keys(const Json& value, const std::vector<std::vector<std::string>>& orders) {
  if (value.is_array()) {
    Json out = Json::array();
    for (auto& x : value) out.push_back(reorder_keys(x, orders));
    return out;
  }
  if (!value.is_object()) return value;
  const std::vector<std::string>* order = best_order(value, orders);
  std::unordered_map<std::string, size_t> rank;
  size_t n_order = order ? order->size() : 0;
  if (order)
    for (size_t i = 0; i < order->size(); ++i) rank.emplace((*order)[i], i);
  std::vector<std::pair<size_t, std::string>> keys;
  size_t idx = 0;
  for (auto it = value.begin(); it != value.end(); ++it, ++idx) {
    auto r = rank.find(it.key());
    keys.emplace_back(r != rank.end() ? r->second : n_order + idx, it.key());
  }
  std::stable_sort(keys.begin(), keys.end());
  Json out = Json::object();
  for (auto& [r, k] : keys) out[k] = reorder_keys(value[k], orders);
  return out;
}

}  // namespace ringlm::guided
