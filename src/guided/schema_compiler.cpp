#include "guided/schema_compiler.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <tuple>
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
constexpr int64_t kMaxCount = 5000;  // largest min/maxItems, min/maxProperties expanded

// Keywords that never restrict a value (or are handled by the keyword that owns them).
const std::unordered_set<std::string>& annotation_keywords() {
  static const std::unordered_set<std::string> k = {
      "$schema", "$id", "id", "$comment", "$defs", "definitions", "title", "description", "default",
      "examples", "example", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
      "contentSchema", "$anchor", "$vocabulary", "nullable", "discriminator", "xml", "externalDocs",
      "markdownDescription", "enumDescriptions", "x-patterns", "x-nots"};
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
      "format", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef", "x-patterns", "x-nots",
      "x-conds"};
  return kw.count(k) > 0;
}

bool has_assertions(const Json& s) {
  if (!s.is_object()) return !(s.is_boolean() && s.get<bool>());
  for (auto it = s.begin(); it != s.end(); ++it)
    if (is_known_assertion(it.key())) return true;
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
  // The spec requires a non-negative integer (2.0 counts); 1.5 is refused rather than rounded,
  // since no rounding direction matches every validator.
  if (!it->is_number() || it->get<double>() < 0 || std::floor(it->get<double>()) != it->get<double>()) {
    fail("keyword '", k, "' must be a non-negative integer, got ", it->dump());
  }
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
    draft_ = schema_draft(root_);
    refs_ = std::make_unique<RefResolver>(root_, draft4);
    index_pointers(root_, "");
  }

  CompiledSchema run() {
    uint32_t root = rule_for(root_);
    CompiledSchema out;
    out.grammar = b_.finish(root);
    out.property_orders = order_;
    out.unenforced = unenforced_;
    out.grammar.unenforced = unenforced_;
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

  // ------------------------------------------------------------------ error locations

  // JSON pointers of every subschema of the root (by address), so an error raised while
  // compiling a schema names where it is. Schemas built here (allOf merges, if/then cases) have
  // no pointer: errors inside them name the nearest enclosing schema of the document.
  void index_pointers(const Json& s, const std::string& ptr) {
    pointers_.emplace(&s, ptr);
    if (s.is_object()) {
      for (auto it = s.begin(); it != s.end(); ++it) {
        if (it.value().is_object() || it.value().is_array()) index_pointers(it.value(), ptr + "/" + pointer_escape(it.key()));
      }
    } else if (s.is_array()) {
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i].is_object() || s[i].is_array()) index_pointers(s[i], ptr + "/" + std::to_string(i));
    }
  }

  static std::string pointer_escape(const std::string& k) {
    std::string out;
    for (char c : k) {
      if (c == '~') out += "~0";
      else if (c == '/') out += "~1";
      else out.push_back(c);
    }
    return out;
  }

  struct Where {
    const Json* schema;
    const std::string* pointer;
  };

  // Rewrites an error from inside schema `w` to name its location: "keyword 'K'" becomes
  // "keyword 'K' at /pointer/K" (the keyword's own pointer when `w` has it, else the schema's).
  [[noreturn]] static void rethrow_at(const Error& e, const Where& w) {
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

  // Emits every serialisation of a value valid under `s` between `from` and `to`.
  void value(const Json& s_in, uint32_t from, uint32_t to) {
    auto known = pointers_.find(&s_in);
    if (known == pointers_.end()) {
      value_at(s_in, from, to);
      return;
    }
    where_.push_back({&s_in, &known->second});
    try {
      value_at(s_in, from, to);
    } catch (const Error& e) {
      Where w = where_.back();
      where_.pop_back();
      rethrow_at(e, w);
    }
    where_.pop_back();
  }

  void value_at(const Json& s_in, uint32_t from, uint32_t to) {
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
        all.push_back(Json{{"oneOf", *one_of}});
        rest.erase("oneOf");
        rest["allOf"] = all;
      } else {
        alts = any_of != s.end() ? *any_of : *one_of;
        rest.erase(any_of != s.end() ? "anyOf" : "oneOf");
      }
      if (!alts.is_array() || alts.empty()) fail("anyOf/oneOf must be a non-empty array");
      // oneOf is generated as the union of its branches, which is exact only when no instance
      // can satisfy two of them.
      const Json& src = any_of != s.end() ? *any_of : *one_of;
      std::vector<const Json*> branch;
      for (auto& a : src) branch.push_back(&a);
      if (any_of == s.end()) exclusive_one_of(src, branch);
      bool plain = !has_assertions(rest);
      for (size_t i = 0; i < alts.size(); ++i) {
        const Json& alt = *branch[i];
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

  // ------------------------------------------------------------------ strict / lenient

  // An assertion the grammar cannot enforce exactly: refused in strict mode, recorded (checked
  // only by the validator after generation) in lenient mode.
  void unenforced(const std::string& keyword, const std::string& why) {
    if (options_.mode == SchemaMode::kStrict) fail("unsupported keyword '", keyword, "' (", why, ")");
    std::string ptr = where_.empty() ? "" : *where_.back().pointer;
    std::string note = keyword + " at " + ptr + "/" + pointer_escape(keyword) + ": " + why;
    if (std::find(unenforced_.begin(), unenforced_.end(), note) == unenforced_.end()) unenforced_.push_back(note);
  }

  // oneOf as a union is exact when no two branches overlap. Branches that may overlap are made
  // exclusive by conjoining the negation of each branch they may overlap with, when that
  // negation is a `not` form the grammar expresses (negatable()); otherwise the exclusivity is
  // unenforced (strict: refused). branch[i] is replaced by the exclusive form where needed.
  void exclusive_one_of(const Json& alts, std::vector<const Json*>& branch) {
    size_t n = alts.size();
    std::vector<std::vector<size_t>> overlaps(n);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j)
        if (!provably_disjoint(alts[i], alts[j], 0)) overlaps[i].push_back(j), overlaps[j].push_back(i);
    for (size_t i = 0; i < n; ++i)
      for (size_t j : overlaps[i])
        if (!negatable(alts[j])) {
          unenforced("oneOf", "branches " + std::to_string(std::min(i, j)) + " and " + std::to_string(std::max(i, j)) +
                                  " may both match; exclusivity cannot be enforced by a grammar");
          return;
        }
    for (size_t i = 0; i < n; ++i) {
      if (overlaps[i].empty()) continue;
      Json all = Json::array({alts[i]});
      for (size_t j : overlaps[i]) all.push_back(Json{{"not", alts[j]}});
      branch[i] = &keep(Json{{"allOf", std::move(all)}});
    }
  }

  // The `not` forms apply_not() handles without error: {} / booleans, a type, string / boolean /
  // null values, a compilable pattern, one required name.
  bool negatable(const Json& n_in) {
    const Json& n = n_in.is_object() && n_in.contains("$ref") ? deref(n_in) : n_in;
    if (n.is_boolean() || is_true_schema(n)) return true;
    if (!n.is_object()) return false;
    std::set<std::string> keys;
    for (auto it = n.begin(); it != n.end(); ++it)
      if (!annotation_keywords().count(it.key())) keys.insert(it.key());
    if (keys == std::set<std::string>{"type"}) return true;
    if (keys == std::set<std::string>{"enum"} || keys == std::set<std::string>{"const"}) {
      const Json vals = n.contains("enum") ? n["enum"] : Json::array({n["const"]});
      if (!vals.is_array()) return false;
      for (auto& v : vals)
        if (!v.is_string() && !v.is_boolean() && !v.is_null()) return false;
      return true;
    }
    if (keys == std::set<std::string>{"pattern"} || (keys == std::set<std::string>{"pattern", "type"} && n["type"] == "string")) {
      if (!n["pattern"].is_string()) return false;
      try {
        regex_cached(n["pattern"].get<std::string>());
      } catch (const Error&) {
        return false;
      }
      return true;
    }
    return keys == std::set<std::string>{"required"} && n["required"].is_array() && n["required"].size() == 1 &&
           n["required"][0].is_string();
  }

  // The JSON types a schema allows, from `type` and, without it, from its enum/const values.
  std::set<std::string> value_types(const Json& s) {
    std::set<std::string> t = type_set(s);
    if (!s.contains("type") && (s.contains("enum") || s.contains("const"))) {
      t.clear();
      const Json vals = s.contains("const") ? Json::array({s["const"]}) : s["enum"];
      if (!vals.is_array()) return type_set(Json::object());
      for (auto& v : vals) {
        if (v.is_null()) t.insert("null");
        else if (v.is_boolean()) t.insert("boolean");
        else if (v.is_number()) t.insert(v.is_number_integer() || std::floor(v.get<double>()) == v.get<double>() ? "integer" : "number");
        else if (v.is_string()) t.insert("string");
        else if (v.is_array()) t.insert("array");
        else t.insert("object");
      }
    }
    return t;
  }

  static std::set<std::string> type_meet(const std::set<std::string>& a, const std::set<std::string>& b) {
    std::set<std::string> out;
    for (auto& t : a) {
      if (b.count(t)) out.insert(t);
      else if ((t == "number" && b.count("integer")) || (t == "integer" && b.count("number"))) out.insert("integer");
    }
    return out;
  }

  // Conservative: true only when no instance satisfies both schemas (disjoint types, values of
  // one failing the other, or a property both constrain, one requires, and whose schemas are
  // disjoint or forbidden by the other). False means "may overlap".
  bool provably_disjoint(const Json& a_in, const Json& b_in, int depth) {
    if (depth > 8) return false;
    const Json& a = a_in.is_object() && a_in.contains("$ref") ? deref(a_in) : a_in;
    const Json& b = b_in.is_object() && b_in.contains("$ref") ? deref(b_in) : b_in;
    if (is_false_schema(a) || is_false_schema(b)) return true;
    if (!a.is_object() || !b.is_object() || a.contains("$ref") || b.contains("$ref")) return false;
    std::set<std::string> meet = type_meet(value_types(a), value_types(b));
    if (meet.empty()) return true;
    for (auto [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
      if (!x->contains("enum") && !x->contains("const")) continue;
      const Json vals = x->contains("const") ? Json::array({(*x)["const"]}) : (*x)["enum"];
      if (!vals.is_array()) continue;
      bool any = false;
      for (auto& v : vals)
        if (validator_.validate_subschema(*x, v) && validator_.validate_subschema(*y, v)) any = true;
      if (!any) return true;
    }
    if (meet != std::set<std::string>{"object"}) return false;
    auto prop = [](const Json& s, const std::string& p) -> const Json* {
      auto ps = s.find("properties");
      if (ps == s.end() || !ps->is_object() || !ps->contains(p)) return nullptr;
      return &(*ps)[p];
    };
    auto forbids = [&](const Json& s, const std::string& p) {
      if (const Json* sch = prop(s, p)) return is_false_schema(*sch);
      auto add = s.find("additionalProperties");
      return add != s.end() && is_false_schema(*add) && !s.contains("patternProperties");
    };
    for (auto [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
      auto r = x->find("required");
      if (r == x->end() || !r->is_array()) continue;
      for (auto& name : *r) {
        if (!name.is_string()) continue;
        std::string p = name.get<std::string>();
        if (forbids(*y, p)) return true;
        const Json* px = prop(*x, p);
        const Json* py = prop(*y, p);
        if (px && py && provably_disjoint(*px, *py, depth + 1)) return true;
      }
    }
    return false;
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
    if (a == b) return a;  // idempotent; also keeps {"$ref": X} AND {"$ref": X} a (memoised) $ref
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
      if (k == "if" || k == "then" || k == "else") continue;  // b's conditional: a clause, below
      if (k == "x-conds") {
        for (auto& c : v) a["x-conds"].push_back(c);
        continue;
      }
      if (annotation_keywords().count(k) && k != "x-patterns" && k != "x-nots") continue;
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
      } else if (k == "not") {
        Json nots = a.contains("x-nots") ? a["x-nots"] : Json::array();
        nots.push_back(v);
        a["x-nots"] = nots;
      } else if (k == "x-nots") {
        for (auto& x : v) cur.push_back(x);
      } else if (k == "anyOf" || k == "oneOf") {
        Json all = a.contains("allOf") ? a["allOf"] : Json::array();
        all.push_back(Json{{k, v}});
        a["allOf"] = all;
      } else if (k == "uniqueItems") {
        cur = cur.is_boolean() && v.is_boolean() ? Json(cur.get<bool>() || v.get<bool>()) : v;
      } else if (cur != v) {
        fail("unsupported keyword '", k, "' with different values inside allOf");
      }
    }
    if (auto clause = conditional_of(b); !clause.is_null()) a["x-conds"].push_back(std::move(clause));
    return a;
  }

  // A schema's own if/then/else as a clause {"if", "then"?, "else"?}; null when it has none (an
  // `if` without then/else, or then/else without `if`, asserts nothing).
  static Json conditional_of(const Json& s) {
    if (!s.is_object() || !s.contains("if") || !(s.contains("then") || s.contains("else"))) return nullptr;
    Json c = Json::object();
    for (const char* k : {"if", "then", "else"})
      if (s.contains(k)) c[k] = s[k];
    return c;
  }

  // ------------------------------------------------------------------ leaves

  void leaf(const Json& s, uint32_t from, uint32_t to) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (k == "unevaluatedProperties" || k == "unevaluatedItems" || k == "$dynamicRef" || k == "$recursiveRef") {
        if ((k == "unevaluatedProperties" || k == "unevaluatedItems") && is_true_schema(it.value())) continue;
        fail("unsupported keyword '", k, "'");
      }
    }
    // Keywords newer than the schema's draft are unknown there, hence ignored (as the validator
    // does): if/then/else before draft 7, dependentSchemas before 2019-09.
    const bool use_if = draft_ >= 7, use_dependent = draft_ >= 2019;
    auto conditional = [&] {
      if (use_if && (s.contains("x-conds") || s.contains("if"))) return true;
      if (use_dependent && s.contains("dependentSchemas")) return true;
      auto d = s.find("dependencies");
      if (d == s.end() || !d->is_object()) return false;
      for (auto& x : *d)
        if (!x.is_array()) return true;
      return false;
    };
    if (!s.contains("enum") && !s.contains("const") && conditional()) {  // with values the validator decides
      Json clauses = use_if && s.contains("x-conds") ? s["x-conds"] : Json::array();
      if (Json own = conditional_of(s); use_if && !own.is_null()) clauses.push_back(std::move(own));
      Json rest = s;
      for (const char* k : {"if", "then", "else", "x-conds"}) rest.erase(k);
      // dependentSchemas / schema-form dependencies: "if property p is present, S applies".
      for (const char* kw : {"dependentSchemas", "dependencies"}) {
        auto d = s.find(kw);
        if (d == s.end()) continue;
        if (std::string(kw) == "dependentSchemas" && !use_dependent) {
          rest.erase(kw);
          continue;
        }
        if (!d->is_object()) fail("keyword '", kw, "' must be an object");
        for (auto it = d->begin(); it != d->end(); ++it) {
          if (it.value().is_array()) continue;  // dependentRequired form: object() handles it
          if (!is_true_schema(it.value())) {
            clauses.push_back(Json{{"if", Json{{"required", Json::array({it.key()})}}}, {"then", it.value()}});
          }
          rest[kw].erase(it.key());
        }
        if (rest[kw].empty()) rest.erase(kw);
      }
      if (!clauses.empty()) {
        conditionals(rest, clauses, from, to);
        return;
      }
    }
    std::set<std::string> types = type_set(s);
    not_ = NotInfo{};
    // With enum/const every `not` form is decided per value by the validator (below).
    bool has_values = s.contains("enum") || s.contains("const");
    if (!has_values) {
      if (auto n = s.find("not"); n != s.end()) apply_not(*n, types);
      if (auto n = s.find("x-nots"); n != s.end())
        for (auto& x : *n) apply_not(x, types);
    }
    NotInfo nots = not_;
    if (!nots.values.empty()) {
      for (auto& v : nots.values) {
        if (v.is_number() && (types.count("number") || types.count("integer"))) {
          fail("unsupported keyword 'not' (excluding a number)");
        }
        if ((v.is_array() && types.count("array")) || (v.is_object() && types.count("object"))) {
          fail("unsupported keyword 'not' (excluding an array or object value)");
        }
      }
    }

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
      rest.erase("x-nots");
      if (rest.contains("x-conds")) {  // conditionals are decided per value by the validator
        Json all = rest.contains("allOf") ? rest["allOf"] : Json::array();
        for (auto& c : rest["x-conds"]) all.push_back(c);
        rest.erase("x-conds");
        rest["allOf"] = all;
      }
      std::vector<std::string> pats;
      if (s.contains("x-patterns"))
        for (auto& p : s["x-patterns"]) pats.push_back(p.get<std::string>());
      std::set<std::string> seen;
      for (auto& v : values) {
        if (!validator_.validate_subschema(rest, v)) continue;
        bool excluded = false;
        if (auto xn = s.find("x-nots"); xn != s.end())
          for (auto& n : *xn)
            if (validator_.validate_subschema(n, v)) excluded = true;
        if (excluded) continue;
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
      if (is_known_assertion(it.key())) any_type_keywords = true;
    if (types.size() == 7 && !any_type_keywords) {
      b_.call(from, any_rule(), to);
      return;
    }
    auto excluded = [&](const Json& v) {
      for (auto& x : nots.values)
        if (json_equal(x, v)) return true;
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
      if (t == "number") number(s, from, to, false);
      if (t == "string") string_value(s, from, to);
      if (t == "array") array(s, from, to);
      if (t == "object") object(s, from, to);
    }
  }

  // ------------------------------------------------------------------ if / then / else

  // if/then/else clauses whose `if` only tests properties of an object (`properties` with
  // const/enum values or one other schema per property, `required`, `type: object`): the
  // instances are split into disjoint cases by what each tested property is (absent, one class of
  // values, any other value; or matching / not matching its schema) and, for objects not being
  // one, the type. In each case every `if` has a known outcome, so the case is the schema AND the
  // case's constraints AND the chosen then/else branches: an exact union. Other `if` forms are
  // reported as unsupported.
  struct PropCase {
    // kValues: one of `values`; kOther: none of `values` (all tested values) and, with a schema
    // test, matching it (match) or not.
    enum Kind { kAbsent, kPresent, kValues, kOther } kind;
    Json values;
    std::set<size_t> holds;           // clauses whose test on this property holds in this case
    const Json* schema = nullptr;     // kOther: the (one) non-value test, if any
    bool match = false;
  };

  void conditionals(const Json& rest, const Json& clauses, uint32_t from, uint32_t to) {
    struct Clause {
      bool always = false, never = false;  // boolean `if`
      bool needs_object = false;
      std::vector<std::string> required;
      std::vector<std::pair<std::string, const Json*>> tests;  // property -> schema
      const Json* then_s = nullptr;
      const Json* else_s = nullptr;
    };
    std::vector<Clause> cs;
    std::vector<std::string> props;  // tested names, in first-seen order
    auto note_prop = [&](const std::string& p) {
      if (std::find(props.begin(), props.end(), p) == props.end()) props.push_back(p);
    };
    for (const Json& c : clauses) {
      Clause cl;
      if (c.contains("then")) cl.then_s = &c["then"];
      if (c.contains("else")) cl.else_s = &c["else"];
      const Json& cond = c["if"].is_object() && c["if"].contains("$ref") ? deref(c["if"]) : c["if"];
      if (cond.is_boolean() || is_true_schema(cond)) {
        (cond.is_boolean() && !cond.get<bool>() ? cl.never : cl.always) = true;
        cs.push_back(cl);
        continue;
      }
      if (!cond.is_object()) fail("unsupported keyword 'if'");
      for (auto it = cond.begin(); it != cond.end(); ++it) {
        const std::string& k = it.key();
        if (annotation_keywords().count(k)) continue;
        if (k == "type") {
          if (type_set(cond) != std::set<std::string>{"object"}) fail("unsupported keyword 'if' (type other than object)");
          cl.needs_object = true;
        } else if (k == "required") {
          if (!it.value().is_array()) fail("keyword 'required' must be an array");
          for (auto& r : it.value()) {
            if (!r.is_string()) fail("keyword 'required' must list strings");
            cl.required.push_back(r.get<std::string>());
            note_prop(r.get<std::string>());
          }
        } else if (k == "properties") {
          if (!it.value().is_object()) fail("keyword 'properties' must be an object");
          for (auto p = it.value().begin(); p != it.value().end(); ++p) {
            const Json& sch = p.value().is_object() && p.value().contains("$ref") ? deref(p.value()) : p.value();
            if (is_true_schema(sch)) continue;  // no test
            cl.tests.emplace_back(p.key(), &sch);
            note_prop(p.key());
          }
        } else {
          fail("unsupported keyword 'if' (conditions other than properties, required and type object)");
        }
      }
      cs.push_back(cl);
    }

    // The cases of each tested property.
    auto value_set = [&](const Json& sch, Json* out) {
      // const / enum (with type and annotations): the finite set of values the test accepts.
      if (!sch.is_object() || !(sch.contains("const") || sch.contains("enum"))) return false;
      for (auto it = sch.begin(); it != sch.end(); ++it)
        if (it.key() != "const" && it.key() != "enum" && it.key() != "type" && !annotation_keywords().count(it.key()))
          return false;
      Json cand = sch.contains("const") ? Json::array({sch["const"]}) : sch["enum"];
      if (!cand.is_array()) fail("keyword 'enum' must be an array");
      *out = Json::array();
      for (auto& v : cand)
        if (validator_.validate_subschema(sch, v)) out->push_back(v);
      return true;
    };
    std::vector<std::vector<PropCase>> cases(props.size());
    for (size_t pi = 0; pi < props.size(); ++pi) {
      const std::string& p = props[pi];
      std::vector<std::pair<size_t, Json>> value_tests;
      std::vector<std::pair<size_t, const Json*>> other_tests;
      for (size_t i = 0; i < cs.size(); ++i) {
        for (auto& [name, sch] : cs[i].tests) {
          if (name != p) continue;
          Json vals;
          if (value_set(*sch, &vals)) value_tests.emplace_back(i, std::move(vals));
          else other_tests.emplace_back(i, sch);
        }
      }
      std::vector<PropCase>& out = cases[pi];
      out.push_back({PropCase::kAbsent, Json(), {}});
      if (value_tests.empty() && other_tests.empty()) {
        out.push_back({PropCase::kPresent, Json(), {}});
      } else {
        // At most one distinct non-value test per property (its negation is then one `not`).
        for (auto& [i, sch] : other_tests)
          if (*sch != *other_tests[0].second) fail("unsupported keyword 'if' (different conditions on property '", p, "')");
        const Json* test = other_tests.empty() ? nullptr : other_tests[0].second;
        std::set<size_t> test_clauses;
        for (auto& [i, sch] : other_tests) test_clauses.insert(i);
        // Classes of the tested values by the set of clauses whose test they satisfy.
        Json all = Json::array();
        std::vector<std::set<size_t>> sig;
        for (auto& [i, vals] : value_tests) {
          for (auto& v : vals) {
            size_t k = 0;
            while (k < all.size() && !json_equal(all[k], v)) ++k;
            if (k == all.size()) all.push_back(v), sig.emplace_back();
            sig[k].insert(i);
          }
        }
        std::map<std::set<size_t>, size_t> class_of;
        for (size_t k = 0; k < all.size(); ++k) {
          if (test && validator_.validate_subschema(*test, all[k])) sig[k].insert(test_clauses.begin(), test_clauses.end());
          auto [it, inserted] = class_of.emplace(sig[k], out.size());
          if (inserted) out.push_back({PropCase::kValues, Json::array(), sig[k]});
          out[it->second].values.push_back(all[k]);
        }
        // Every other value: split by the schema test when there is one.
        if (test) {
          out.push_back({PropCase::kOther, all, test_clauses, test, true});
          out.push_back({PropCase::kOther, all, {}, test, false});
        } else {
          out.push_back({PropCase::kOther, all, {}});
        }
      }
    }
    size_t combos = 1;
    for (auto& c : cases) {
      combos *= c.size();
      if (combos > 96) fail("unsupported keyword 'if' (more than 96 cases)");
    }

    auto chosen = [&](const Clause& cl, bool holds, Json& all) {
      const Json* branch = holds ? cl.then_s : cl.else_s;
      if (branch) all.push_back(*branch);
    };
    // Each case is its own alternative. A case that negates a test (a value outside the tested
    // ones, or not matching the tested schema) needs `not` on that property; when the grammar
    // cannot express that negation the `if` is what is unsupported.
    auto emit_case = [&](Json all, bool negates) {
      // Memoised by content: a then/else branch that reaches this same conditional schema again
      // (recursion through $ref inlined by allOf merging) calls the rule being built.
      Json alt_json = Json{{"allOf", std::move(all)}};
      std::string key = alt_json.dump();
      uint32_t r;
      if (auto hit = case_rules_.find(key); hit != case_rules_.end()) {
        b_.call(from, hit->second, to);
        return;
      }
      const Json& alt = keep(std::move(alt_json));
      try {
        r = b_.new_rule();
        case_rules_.emplace(key, r);
        uint32_t end = b_.new_state();
        b_.set_final(end);
        value(alt, b_.rule_start(r), end);
      } catch (const Error& e) {
        std::string msg = e.what();
        if (!negates || msg.find("unsupported keyword 'not'") == std::string::npos) throw;
        fail("unsupported keyword 'if' (the case where it does not hold needs ", msg, ")");
      }
      b_.call(from, r, to);
    };
    std::vector<size_t> pick(props.size(), 0);
    for (size_t n = 0; n < combos; ++n) {
      Json all = Json::array({rest, Json{{"type", "object"}}});
      bool negates = false;
      for (size_t pi = 0; pi < props.size(); ++pi) {
        const PropCase& pc = cases[pi][pick[pi]];
        const std::string& p = props[pi];
        switch (pc.kind) {
          case PropCase::kAbsent: all.push_back(Json{{"not", Json{{"required", Json::array({p})}}}}); break;
          case PropCase::kPresent: all.push_back(Json{{"required", Json::array({p})}}); break;
          case PropCase::kValues:
            all.push_back(Json{{"required", Json::array({p})}, {"properties", Json{{p, Json{{"enum", pc.values}}}}}});
            break;
          case PropCase::kOther: {
            Json parts = Json::array();
            if (!pc.values.empty()) parts.push_back(Json{{"not", Json{{"enum", pc.values}}}}), negates = true;
            if (pc.schema && pc.match) parts.push_back(*pc.schema);
            if (pc.schema && !pc.match) parts.push_back(Json{{"not", *pc.schema}}), negates = true;
            all.push_back(Json{{"required", Json::array({p})}, {"properties", Json{{p, Json{{"allOf", parts}}}}}});
            break;
          }
        }
      }
      for (size_t i = 0; i < cs.size(); ++i) {
        const Clause& cl = cs[i];
        bool holds = !cl.never;
        if (!cl.always && !cl.never) {
          for (auto& r : cl.required) {
            size_t pi = size_t(std::find(props.begin(), props.end(), r) - props.begin());
            if (cases[pi][pick[pi]].kind == PropCase::kAbsent) holds = false;
          }
          for (auto& [name, sch] : cl.tests) {
            size_t pi = size_t(std::find(props.begin(), props.end(), name) - props.begin());
            const PropCase& pc = cases[pi][pick[pi]];
            if (pc.kind != PropCase::kAbsent && !pc.holds.count(i)) holds = false;
          }
        }
        chosen(cl, holds, all);
      }
      emit_case(std::move(all), negates);
      for (size_t pi = 0; pi < props.size(); ++pi) {  // next combination
        if (++pick[pi] < cases[pi].size()) break;
        pick[pi] = 0;
      }
    }
    // Values that are not objects: `if` holds unless it requires an object (properties and
    // required say nothing about other types).
    std::set<std::string> others = type_set(rest);
    others.erase("object");
    if (!others.empty()) {
      Json all = Json::array({rest, Json{{"type", type_json(others)}}});
      for (auto& cl : cs) chosen(cl, !cl.never && (cl.always || !cl.needs_object), all);
      emit_case(std::move(all), false);
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

  // What the `not` keywords of the schema being emitted exclude.
  struct NotInfo {
    Json values = Json::array();        // excluded scalar values (enum/const)
    std::vector<std::string> patterns;  // strings must not match these
    std::set<std::string> keys;         // properties that must be absent
  };

  // `not` forms the grammar can honour: {} / true (nothing valid), a type restriction, enum or
  // const values (strings, booleans, null), a pattern, required names (one name, or an anyOf
  // of single names: those properties are never generated). Anything else is an error.
  void apply_not(const Json& n_in, std::set<std::string>& types) {
    const Json& n = n_in.is_object() && n_in.contains("$ref") ? deref(n_in) : n_in;
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

  static void only_objects(std::set<std::string>& types) {
    bool obj = types.count("object") > 0;
    types.clear();
    if (obj) types.insert("object");
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
    auto integral = [](const std::optional<double>& v) { return !v || std::floor(*v) == *v; };
    auto zero = [](const std::optional<double>& v) { return !v || *v == 0; };
    if (!integer && bounded && zero(nb.lower) && zero(nb.upper) && !(nb.lower && nb.upper)) {
      // Bounds at 0 only: the sign decides, so exponent notation (`1e-06` under `minimum: 0`)
      // is generated too. Other bounded numbers are generated without it (docs/guided.md).
      bool positive = nb.lower.has_value();
      re = signed_number_regex(positive, positive ? !nb.lower_exclusive : !nb.upper_exclusive);
    } else if (!integer && bounded && (!integral(nb.lower) || !integral(nb.upper))) {
      // Decimal bounds: built as an automaton (intersection of >= and <= languages).
      std::string key = "decimal:" + (nb.lower ? Json(*nb.lower).dump() : "") + (nb.lower_exclusive ? "x" : "i") +
                        ":" + (nb.upper ? Json(*nb.upper).dump() : "") + (nb.upper_exclusive ? "x" : "i");
      auto it = number_rules_.find(key);
      if (it != number_rules_.end()) return it->second;
      uint32_t r = b_.new_rule();
      number_rules_[key] = r;
      uint32_t end = b_.new_state();
      b_.set_final(end);
      emit_ascii_dfa(dfa_intersect(number_dfa(nb), digit_cap(false)), b_.rule_start(r), end);
      return r;
    }
    if (!re.empty()) {
      // signed_number_regex above
    } else if (integer) {
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
    if (re.empty()) return r;
    // Languages with an exponent take the finite-double cap; the others (integers, bounded
    // numbers) only the digit counts, a much smaller automaton to intersect with. The two
    // unbounded languages, in nearly every schema, are intersected once per process.
    const bool exponent = re.find("[eE]") != std::string::npos;
    static const std::string any_integer = "^-?(?:0|[1-9][0-9]*)$";
    static const std::string any_number = "^-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$";
    if (re == any_integer || re == any_number) {
      static const CpDfa int_dfa = dfa_intersect(compile_regex(any_integer, false), digit_cap(false));
      static const CpDfa num_dfa = dfa_intersect(compile_regex(any_number, false), digit_cap(true));
      emit_ascii_dfa(re == any_integer ? int_dfa : num_dfa, b_.rule_start(r), end);
      return r;
    }
    emit_ascii_dfa(dfa_intersect(compile_regex(re, false), digit_cap(exponent)), b_.rule_start(r), end);
    return r;
  }

  // Numbers have at most 20 integer digits, 20 fraction digits and an exponent that keeps them
  // finite doubles (a deliberate restriction: beyond what a double or int64 carries, and it
  // keeps a model from writing digits forever; finite_number_cap).
  const CpDfa& digit_cap(bool exponent) {
    // Built once per process (the finite cap has a few hundred DFA states).
    static const CpDfa finite = compile_regex(finite_number_cap(), false);
    static const CpDfa digits = compile_regex("^-?[0-9]{1,20}(?:\\.[0-9]{1,20})?$", false);
    return exponent ? finite : digits;
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
    // A JSON integer bound keeps every digit (int64 / uint64); compared exactly, so that
    // `maximum: 9223372036854776000` does not round to a double and let 9223372036854776001 in.
    auto exact = [](const Json& v) -> std::optional<ExactInt> {
      if (v.is_number_unsigned()) return ExactInt(v.get<uint64_t>());
      if (v.is_number_integer()) return ExactInt(v.get<int64_t>());
      return std::nullopt;
    };
    // a >= b (lower) / a <= b (upper), exactly when both are integers.
    auto at_least = [&](const Json& a, const std::optional<double>& b, const std::optional<ExactInt>& be) {
      if (auto ae = exact(a); ae && be) return *ae >= *be;
      return a.get<double>() >= *b;
    };
    auto min = number_kw(s, "minimum"), max = number_kw(s, "maximum");
    auto exmin_it = s.find("exclusiveMinimum"), exmax_it = s.find("exclusiveMaximum");
    nb.lower = min;
    nb.upper = max;
    if (min) nb.lower_exact = exact(s["minimum"]);
    if (max) nb.upper_exact = exact(s["maximum"]);
    if (exmin_it != s.end()) {
      if (exmin_it->is_boolean()) {
        nb.lower_exclusive = exmin_it->get<bool>() && min;
      } else if (exmin_it->is_number()) {
        if (!nb.lower || at_least(*exmin_it, nb.lower, nb.lower_exact)) {
          nb.lower = exmin_it->get<double>(), nb.lower_exact = exact(*exmin_it), nb.lower_exclusive = true;
        }
      }
    }
    if (exmax_it != s.end()) {
      if (exmax_it->is_boolean()) {
        nb.upper_exclusive = exmax_it->get<bool>() && max;
      } else if (exmax_it->is_number()) {
        bool tighter = !nb.upper;
        if (!tighter) {
          auto e = exact(*exmax_it);
          tighter = e && nb.upper_exact ? *e <= *nb.upper_exact : exmax_it->get<double>() <= *nb.upper;
        }
        if (tighter) nb.upper = exmax_it->get<double>(), nb.upper_exact = exact(*exmax_it), nb.upper_exclusive = true;
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
      } else if (is_asserting_format(f)) {
        unenforced("format", "format '" + f + "' is not a regular language; neither the grammar nor the validator checks it");
      }
    }
    *min_len = count_kw(s, "minLength", 0);
    *max_len = count_kw(s, "maxLength", -1);
    // A hostname is at most 253 characters (ASCII, so code points = bytes): a length bound on
    // the body rather than a 253-state counter inside the label DFA.
    if (std::find(formats.begin(), formats.end(), "hostname") != formats.end()) {
      *max_len = *max_len < 0 ? 253 : std::min<int64_t>(*max_len, 253);
    }
    return dfa;
  }

  void string_value(const Json& s, uint32_t from, uint32_t to) {
    int64_t mn, mx;
    CpDfa dfa = string_dfa(s, &mn, &mx);
    NotInfo nots = not_;
    std::vector<std::u32string> excluded;
    for (auto& v : nots.values)
      if (v.is_string()) excluded.push_back(utf8_to_u32(v.get<std::string>()));
    if (!excluded.empty()) dfa = dfa_intersect(dfa, dfa_complement(dfa_literals(excluded)));
    for (auto& p : nots.patterns) {
      try {
        dfa = dfa_intersect(dfa, dfa_complement(regex_cached(p)));
      } catch (const Error& e) {
        fail("unsupported keyword 'not': ", e.what());
      }
    }
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
    // A state from which every code point sequence survives (all reachable states have a
    // transition for every code point) admits the plain-token fast path: any run of plain
    // characters that fits the length bound is allowed.
    std::vector<char> complete(dfa.states.size(), 0), total(dfa.states.size(), 1);
    for (size_t d = 0; d < dfa.states.size(); ++d) {
      uint32_t next = 0;
      for (auto& e : dfa.states[d].edges) {
        if (e.lo != next) break;
        next = e.hi + 1;
      }
      complete[d] = next == kMaxCodePoint + 1;
    }
    // total = complete and every successor total: greatest fixed point.
    for (size_t d = 0; d < dfa.states.size(); ++d) total[d] = complete[d];
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t d = 0; d < dfa.states.size(); ++d) {
        if (!total[d]) continue;
        for (auto& e : dfa.states[d].edges)
          if (!total[size_t(e.to)]) {
            total[d] = 0, changed = true;
            break;
          }
      }
    }
    Grammar::Body body;
    body.universal = dfa.accepts_everything() && dfa.states.size() == 1;
    if (!body.universal) {
      // Liveness by backward induction over the count: (k, d) is live when it may close here
      // or some edge leads to a live (k+1, d'). Counts saturate at min when max is unbounded.
      int64_t top = mx >= 0 ? mx : mn;
      size_t nd = dfa.states.size();
      if (uint64_t(top + 1) * nd > 50'000'000) fail("string constraints (pattern x length) are too large");
      body.live.assign(size_t(top + 1) * nd, 0);
      for (int64_t k = top; k >= 0; --k) {
        for (size_t d = 0; d < nd; ++d) {
          bool live = dfa.states[d].accept && k >= mn;
          if (mx < 0 && k == top) {
            // Saturated, unbounded: live iff acceptance is reachable (prune_dead kept only those).
            live = true;
          } else if (!live && (mx < 0 || k < mx)) {
            int64_t nk = mx >= 0 ? k + 1 : std::min(k + 1, mn);
            for (auto& e : dfa.states[d].edges)
              if (body.live[size_t(nk) * nd + size_t(e.to)]) {
                live = true;
                break;
              }
          }
          body.live[size_t(k) * nd + d] = live;
        }
      }
      if (!body.live[0]) return;  // no string satisfies the constraints
    }
    body.dfa = std::make_shared<CpDfa>(dfa);
    body.total = std::move(total);
    body.min = mn;
    body.max = mx;
    body.to = to;
    uint32_t bi = b_.add_body(std::move(body));
    b_.eps(start, b_.body_state(bi, 0, 0));
  }

  // ------------------------------------------------------------------ arrays

  void array(const Json& s, uint32_t from, uint32_t to) {
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

    // contains / minContains: at least `need` elements also match the contains schema. Exact as
    // "each element is either items, or items AND contains, the latter at least `need` times":
    // any valid array is generated by choosing `need` of its matching elements for the second
    // form. maxContains (at most so many matches) would need the negation of the contains
    // schema; it is supported only when the array cannot be that long anyway.
    const Json* contains = nullptr;
    int64_t need = 0;
    if (auto c = s.find("contains"); c != s.end() && draft_ >= 6) {
      need = draft_ >= 2019 ? count_kw(s, "minContains", 1) : 1;
      int64_t most = draft_ >= 2019 ? count_kw(s, "maxContains", -1) : -1;
      if (most >= 0 && most < need) return;
      if (most >= 0 && (mx < 0 || mx > most)) fail("unsupported keyword 'maxContains'");
      if (need > 0) {
        if (is_false_schema(*c)) return;
        if (mx >= 0 && mx < need) return;
        if (need > kMaxCount) fail("minContains above ", kMaxCount, " is not supported");
        contains = &*c;
      }
    }
    bool unique = false;
    if (auto u = s.find("uniqueItems"); u != s.end() && u->is_boolean() && u->get<bool>()) unique = mx < 0 || mx > 1;
    if (unique) {
      if (contains) fail("unsupported keyword 'uniqueItems' (with contains)");
      unique_array(prefix, *rest, mn, mx, from, to);
      return;
    }

    // States after i elements with j contains-matches so far (j saturates at need); with no
    // maxItems the last i (>= 1, so it is past the first element and needs commas) loops.
    int64_t last = std::max<int64_t>({int64_t(prefix.size()), mn, 1});
    if (mx >= 0) last = mx;
    if (last > kMaxCount) fail("minItems/maxItems above ", kMaxCount, " are not supported");
    if ((last + 1) * (need + 1) > 4 * kMaxCount) fail("unsupported keyword 'minContains' (with many items)");
    std::string comma = sep_comma(options_.whitespace);
    uint32_t open = b_.new_state();
    b_.literal(from, open, "[");
    std::vector<uint32_t> after(size_t((last + 1) * (need + 1)));
    auto at = [&](int64_t i, int64_t j) -> uint32_t& { return after[size_t(i * (need + 1) + j)]; };
    at(0, 0) = open;
    for (size_t k = 1; k < after.size(); ++k) after[k] = b_.new_state();
    std::map<const Json*, uint32_t> with_contains;  // element schema -> rule of (it AND contains)
    auto matching_rule = [&](const Json& sch) {
      auto it = with_contains.find(&sch);
      if (it != with_contains.end()) return it->second;
      uint32_t r = rule_for(keep(all_of2(sch, *contains)));
      with_contains.emplace(&sch, r);
      return r;
    };
    for (int64_t i = 0; i <= last; ++i) {
      for (int64_t j = 0; j <= need; ++j) {
        uint32_t st = at(i, j);
        if (i >= mn && j >= need) b_.literal(st, to, "]");
        bool can_add = (mx < 0 || i < mx) && (size_t(i) < prefix.size() || rest_allowed);
        if (!can_add) continue;
        const Json& sch = size_t(i) < prefix.size() ? *prefix[size_t(i)] : *rest;
        if (is_false_schema(sch)) continue;
        int64_t ni = i < last ? i + 1 : i;  // unbounded: loop at the last count
        uint32_t start = st;
        if (i > 0) {
          start = b_.new_state();
          b_.literal(st, start, comma);
        }
        b_.call(start, rule_for(sch), at(ni, j));
        if (j < need) b_.call(start, matching_rule(sch), at(ni, j + 1));
      }
    }
  }

  // uniqueItems (with room for two or more elements) over elements with finitely many values
  // (enum / const / boolean / null): the state is the set of values used so far, so a value
  // can never repeat. Other element schemas cannot be made unique by a grammar: error.
  void unique_array(const std::vector<const Json*>& prefix, const Json& rest, int64_t mn, int64_t mx,
                    uint32_t from, uint32_t to) {
    // Distinct values (JSON equality) over every position; per position, the indices allowed.
    std::vector<Json> values;
    auto index_of = [&](const Json& v) -> size_t {
      for (size_t i = 0; i < values.size(); ++i)
        if (json_equal(values[i], v)) return i;
      values.push_back(v);
      return values.size() - 1;
    };
    auto allowed = [&](const Json& sch_in) {
      std::vector<size_t> out;
      if (is_false_schema(sch_in)) return out;
      const Json& sch = sch_in.is_object() && sch_in.contains("$ref") ? deref(sch_in) : sch_in;
      Json candidates = Json::array();
      if (sch.is_object() && sch.contains("const")) {
        candidates.push_back(sch["const"]);
      } else if (sch.is_object() && sch.contains("enum") && sch["enum"].is_array()) {
        candidates = sch["enum"];
      } else if (sch.is_object() && sch.contains("type")) {
        for (auto& t : type_set(sch)) {
          if (t == "boolean") candidates.push_back(true), candidates.push_back(false);
          else if (t == "null") candidates.push_back(nullptr);
          else fail("unsupported keyword 'uniqueItems' (items other than enum, const, boolean or null)");
        }
      } else {
        fail("unsupported keyword 'uniqueItems' (items other than enum, const, boolean or null)");
      }
      for (auto& v : candidates) {
        if (!validator_.validate_subschema(sch_in, v)) continue;
        size_t k = index_of(v);
        if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
      }
      return out;
    };
    std::vector<std::vector<size_t>> pos_values;
    for (auto* p : prefix) pos_values.push_back(allowed(*p));
    std::vector<size_t> rest_values = allowed(rest);
    if (values.size() > 20) fail("unsupported keyword 'uniqueItems' (more than 20 distinct item values)");
    int64_t cap = int64_t(values.size());
    if (mx >= 0) cap = std::min(cap, mx);
    if (mn > cap) return;
    std::vector<uint32_t> literal_rule(values.size());
    for (size_t k = 0; k < values.size(); ++k) {
      uint32_t r = b_.new_rule();
      uint32_t e = b_.new_state();
      b_.set_final(e);
      note_keys(values[k]);
      b_.literal(b_.rule_start(r), e, serialize_json(values[k], options_.whitespace));
      literal_rule[k] = r;
    }
    // Breadth-first over the used-value sets reachable within maxItems.
    std::string comma = sep_comma(options_.whitespace);
    uint32_t open = b_.new_state();
    b_.literal(from, open, "[");
    std::unordered_map<uint32_t, uint32_t> state_of{{0u, open}};
    std::vector<uint32_t> work{0u};
    for (size_t w = 0; w < work.size(); ++w) {
      uint32_t used = work[w];
      uint32_t st = state_of[used];
      int64_t i = __builtin_popcount(used);
      if (i >= mn) b_.literal(st, to, "]");
      if (i >= cap) continue;
      const std::vector<size_t>& here = size_t(i) < pos_values.size() ? pos_values[size_t(i)] : rest_values;
      uint32_t start = st;
      if (i > 0 && !here.empty()) {
        start = b_.new_state();
        b_.literal(st, start, comma);
      }
      for (size_t k : here) {
        if (used & (1u << k)) continue;
        uint32_t next = used | (1u << k);
        auto [it, inserted] = state_of.emplace(next, 0);
        if (inserted) {
          if (state_of.size() > 50000) fail("unsupported keyword 'uniqueItems' (too many value combinations)");
          it->second = b_.new_state();
          work.push_back(next);
        }
        b_.call(start, literal_rule[k], it->second);
      }
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
    std::set<std::string> forbidden = not_.keys;
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

    // dependentRequired / dependencies (array form): "if A is present, B is too". With the fixed
    // property order each pair is one flag: A before B -> emitting A makes B required; B before
    // A -> skipping B forbids A. Names only reachable as additional keys become optional entries.
    struct Dep {
      size_t a, b;
    };
    std::vector<Dep> deps;
    auto entry_index = [&](const std::string& name) -> int64_t {
      for (size_t i = 0; i < entries.size(); ++i)
        if (entries[i].name == name) return int64_t(i);
      return -1;
    };
    auto can_be_extra = [&](const std::string& name) {
      if (forbidden.count(name) || !name_ok(name)) return false;
      return !is_false_schema(*schema_for(name, nullptr));
    };
    for (const char* kw : {"dependentRequired", "dependencies"}) {
      auto d = s.find(kw);
      if (d == s.end() || (std::string(kw) == "dependentRequired" && draft_ < 2019)) continue;
      if (!d->is_object()) fail("keyword '", kw, "' must be an object");
      for (auto it = d->begin(); it != d->end(); ++it) {
        if (!it.value().is_array()) {
          if (is_true_schema(it.value())) continue;
          fail("unsupported keyword '", kw, "' (schema form)");
        }
        int64_t ia = entry_index(it.key());
        if (ia < 0) {
          if (!can_be_extra(it.key())) continue;  // A can never be present
          entries.push_back({it.key(), schema_for(it.key(), nullptr), false});
          ia = int64_t(entries.size() - 1);
        }
        for (auto& dep : it.value()) {
          if (!dep.is_string()) fail("keyword '", kw, "' must list property names");
          std::string bn = dep.get<std::string>();
          if (bn == it.key()) continue;
          int64_t ib = entry_index(bn);
          if (ib < 0) {
            if (!can_be_extra(bn)) {
              if (entries[size_t(ia)].required) return;  // unsatisfiable
              fail("unsupported keyword '", kw, "' (dependency on a property that cannot be present)");
            }
            entries.push_back({bn, schema_for(bn, nullptr), false});
            ib = int64_t(entries.size() - 1);
          }
          if (entries[size_t(ib)].required) continue;
          deps.push_back({size_t(ia), size_t(ib)});
        }
      }
    }
    if (deps.size() > 16) fail("unsupported keyword 'dependentRequired' (more than 16 dependencies)");
    {
      std::vector<std::string> names;
      for (auto& e : entries) names.push_back(e.name);
      note_order(std::move(names));
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
    // Additional keys drawn from a small finite set (patternProperties "^(a|b)$", a propertyNames
    // enum) become optional declared entries in code point order, so no key can repeat and
    // minProperties only counts distinct keys. Larger or infinite key languages stay a loop, and
    // the Matcher keeps their keys distinct (Grammar::distinct_keys).
    {
      std::vector<Extra> kept;
      bool added = false;
      for (auto& x : extras) {
        auto words = dfa_words(x.keys, extra_min_, extra_max_, 64);
        if (!words || entries.size() + words->size() > 128) {
          kept.push_back(std::move(x));
          continue;
        }
        for (auto& w : *words) {
          std::string name;
          for (char32_t c : w) append_utf8(name, uint32_t(c));
          entries.push_back({std::move(name), x.schema, false});
        }
        added = true;
      }
      extras = std::move(kept);
      if (added) {
        std::vector<std::string> names;
        for (auto& e : entries) names.push_back(e.name);
        note_order(std::move(names));
      }
      if (!extras.empty()) b_.require_distinct_keys();
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
    std::map<std::tuple<size_t, int64_t, uint32_t>, uint32_t> ids;
    std::vector<std::tuple<size_t, int64_t, uint32_t>> work;
    uint32_t open = b_.new_state();
    b_.literal(from, open, "{");
    auto get = [&](size_t i, int64_t k, uint32_t f) {
      auto [it, inserted] = ids.emplace(std::make_tuple(i, k, f), 0);
      if (inserted) {
        it->second = work.empty() ? open : b_.new_state();
        work.emplace_back(i, k, f);
      }
      return it->second;
    };
    get(0, 0, 0);
    auto next_count = [&](int64_t k) { return max_p >= 0 ? k + 1 : std::min(k + 1, cap); };
    std::vector<uint32_t> extra_key_rules;
    for (auto& x : extras) extra_key_rules.push_back(key_rule(x.keys));
    for (size_t w = 0; w < work.size(); ++w) {
      auto [i, k, f] = work[w];
      uint32_t st = ids[{i, k, f}];
      bool can_add = max_p < 0 || k < max_p;
      if (i < n) {
        const Entry& e = entries[i];
        // Skipping entry i: not if a dependency made it required; records "absent" flags.
        bool may_skip = !e.required;
        uint32_t f_skip = f, f_emit = f;
        bool may_emit = can_add;
        for (size_t d = 0; d < deps.size(); ++d) {
          uint32_t bit = 1u << d;
          const Dep& dp = deps[d];
          if (dp.a < dp.b) {
            if (dp.b == i && (f & bit)) may_skip = false;  // A was emitted: B required
            if (dp.a == i) f_emit |= bit;
          } else {
            if (dp.b == i) f_skip |= bit;                  // B skipped: A forbidden later
            if (dp.a == i && (f & bit)) may_emit = false;
          }
        }
        if (may_skip) b_.eps(st, get(i + 1, k, f_skip));
        if (may_emit) {
          std::string key = (k > 0 ? comma : "") + "\"" + json_escape(e.name) + "\"" + colon;
          uint32_t after_key = b_.new_state();
          b_.literal(st, after_key, key);
          b_.call(after_key, rule_for(*e.schema), get(i + 1, next_count(k), f_emit));
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
          b_.call(after_colon, rule_for(*extras[x].schema), get(n, next_count(k), f));
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
  int draft_ = 2020;  // keywords newer than the declared draft are unknown there: ignored
  GrammarBuilder b_;
  std::unordered_map<const Json*, uint32_t> memo_;
  std::unordered_map<const Json*, std::string> pointers_;  // subschemas of root_ -> JSON pointer
  std::vector<Where> where_;                              // enclosing schemas with a pointer
  std::vector<std::string> unenforced_;                   // lenient mode: see CompiledSchema
  std::deque<Json> arena_;
  std::unordered_map<std::string, CpDfa> regex_cache_;
  std::unordered_map<std::string, uint32_t> number_rules_;
  std::unordered_map<std::string, uint32_t> case_rules_;  // if/then/else cases by content
  uint32_t any_ = kNone, plain_string_ = kNone;
  int depth_ = 0;
  int64_t extra_min_ = 0, extra_max_ = -1;
  NotInfo not_;  // exclusions of the schema whose typed alternatives are being emitted
  std::vector<std::vector<std::string>> order_;
  std::unordered_set<std::string> order_seen_;
};

}  // namespace

SchemaMode parse_schema_mode(const std::string& text) {
  if (text == "strict") return SchemaMode::kStrict;
  if (text == "lenient") return SchemaMode::kLenient;
  fail("schema mode must be 'strict' or 'lenient', got '", text, "'");
}

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
