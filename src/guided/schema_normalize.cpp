// The normalisation pass: $ref, allOf / anyOf / oneOf (oneOf made exclusive where it can be),
// if/then/else and dependent schemas reduced to conditional clauses, and the drafts' keyword
// sets (a keyword newer than the schema's draft is unknown there). Its answer per schema is a
// Form (schema_passes.h); the allOf meet itself is schema_merge.cpp.
#include <algorithm>
#include <cmath>

#include "guided/schema_passes.h"
#include "util/error.h"

namespace ringlm::guided::schema {

Form Normalizer::normalize(const Json& s, const Extras& x) {
  Form f;
  if (s.is_boolean()) {
    f.kind = s.get<bool>() ? Form::kAnything : Form::kNothing;
    return f;
  }
  if (!s.is_object()) fail("a schema must be an object or a boolean, got ", s.dump().substr(0, 40));

  // $ref: alone -> call the target's rule (memoised: recursion works); with siblings (2019+)
  // -> allOf of the two.
  if (auto r = s.find("$ref"); r != s.end()) {
    const Json& d = deref(s, !x.empty());
    if (&d != &s) {
      f.kind = d.is_object() && d.contains("$ref") ? Form::kInline : Form::kCall;
      f.schema = &d;
      return f;
    }
    const Json* target = cx_.refs->resolve(r->get<std::string>());
    if (!target) fail("unresolvable $ref '", r->get<std::string>(), "'");
    Node rest{s, x};
    rest.keywords.erase("$ref");
    Json all = Json::array();
    if (auto a = rest.keywords.find("allOf"); a != rest.keywords.end()) all = *a;
    all.push_back(*target);
    rest.keywords["allOf"] = all;
    f.kind = Form::kInline;
    f.node = &cx_.keep(std::move(rest));
    return f;
  }
  if (s.contains("anyOf") || s.contains("oneOf")) return union_form(s, x);
  if (auto all = s.find("allOf"); all != s.end()) {
    if (!all->is_array()) fail("allOf must be an array");
    Node merged{s, x};
    merged.keywords.erase("allOf");
    for (auto& m : *all) merge_into(merged, deref_for_merge(m), no_extras());
    f.kind = Form::kInline;
    f.node = &cx_.keep(std::move(merged));
    return f;
  }
  if (auto n = with_negated_nots(s, x)) {
    f.kind = Form::kInline;
    f.node = &cx_.keep(std::move(*n));
    f.negated = "not";
    return f;
  }
  return leaf_form(s, x);
}

// `not` forms Emitter::apply_not() does not handle become their negation as a positive schema
// (schema_negate.cpp), conjoined with the rest. With enum/const the validator decides every
// `not` per value (Emitter::enum_values), so those are left as they are.
std::optional<Node> Normalizer::with_negated_nots(const Json& s, const Extras& x) {
  if (s.contains("enum") || s.contains("const")) return std::nullopt;
  auto own = s.find("not");
  bool rewrite_own = own != s.end() && !negatable(*own);
  bool any = rewrite_own;
  for (auto& n : x.nots) any = any || !negatable(n);
  if (!any) return std::nullopt;
  Node rest{s, x};
  std::vector<Json> todo;
  if (rewrite_own) {
    todo.push_back(*own);
    rest.keywords.erase("not");
  }
  rest.extras.nots.clear();
  for (auto& n : x.nots) (negatable(n) ? rest.extras.nots : todo).push_back(n);
  NegationContext c = negation_context({&rest.keywords});
  std::vector<Json> negations;
  size_t cases = 1;
  for (auto& n : todo) {
    std::string why;
    std::optional<Json> neg = negation(n, c, &why);
    if (!neg) fail("unsupported keyword 'not' (no exact negation: ", why, ")");
    cases *= alternatives(*neg);
    if (cases > cx_.limits.negation_cases) {
      fail("unsupported keyword 'not' (its negation needs more than ", cx_.limits.negation_cases, " alternatives)");
    }
    negations.push_back(std::move(*neg));
  }
  for (auto& n : negations) merge_into(rest, deref_for_merge(n), no_extras());
  return rest;
}

// anyOf / oneOf: a union of the branches, each AND the rest of the schema.
Form Normalizer::union_form(const Json& s, const Extras& x) {
  auto any_of = s.find("anyOf");
  auto one_of = s.find("oneOf");
  Form f;
  f.kind = Form::kUnion;
  f.rest = Node{s, x};
  Json& rest = f.rest.keywords;
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
  for (auto& a : src) f.alternatives.push_back(&a);
  if (any_of == s.end() && exclusive_one_of(src, f.rest, f.alternatives)) f.negated = "oneOf";
  f.plain = !has_assertions(rest) && f.rest.extras.empty();
  return f;
}

Node Normalizer::with_member(const Node& rest, const Json& member) {
  Node n = rest;
  merge_into(n, deref_for_merge(member), no_extras());
  return n;
}

Node Normalizer::all_of(const Node& rest, const std::vector<Json>& parts) {
  Node n;
  merge_into(n, deref_for_merge(rest.keywords), rest.extras);
  for (auto& p : parts) merge_into(n, deref_for_merge(p), no_extras());
  return n;
}

// Keywords newer than the schema's draft are unknown there, hence ignored (as the validator
// does): if/then/else before draft 7, dependentSchemas before 2019-09.
bool Normalizer::is_conditional(const Json& s, const Extras& x) const {
  const bool use_if = cx_.draft >= 7, use_dependent = cx_.draft >= 2019;
  if (use_if && (!x.conditions.empty() || s.contains("if"))) return true;
  if (use_dependent && s.contains("dependentSchemas")) return true;
  auto d = s.find("dependencies");
  if (d == s.end() || !d->is_object()) return false;
  for (auto& v : *d)
    if (!v.is_array()) return true;
  return false;
}

Form Normalizer::leaf_form(const Json& s, const Extras& x) {
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    if (k == "unevaluatedProperties" || k == "unevaluatedItems" || k == "$dynamicRef" || k == "$recursiveRef") {
      if ((k == "unevaluatedProperties" || k == "unevaluatedItems") && is_true_schema(it.value())) continue;
      fail("unsupported keyword '", k, "'");
    }
  }
  // With enum/const values the validator decides the conditionals, per value (Emitter).
  if (!s.contains("enum") && !s.contains("const") && is_conditional(s, x)) {
    Form f = conditional_form(s, x);
    if (!f.clauses.empty()) return f;
  }
  Form f;
  f.kind = Form::kLeaf;
  f.schema = &s;
  f.extras = &x;
  return f;
}

// The schema's conditionals as clauses: its own and its merged members' if/then/else, and
// dependentSchemas / schema-form dependencies ("if property p is present, S applies").
Form Normalizer::conditional_form(const Json& s, const Extras& x) {
  const bool use_if = cx_.draft >= 7, use_dependent = cx_.draft >= 2019;
  Form f;
  f.kind = Form::kConditional;
  if (use_if) f.clauses = x.conditions;
  if (Json own = conditional_of(s); use_if && !own.is_null()) f.clauses.push_back(std::move(own));
  f.rest = Node{s, x};
  f.rest.extras.conditions.clear();
  Json& rest = f.rest.keywords;
  for (const char* k : {"if", "then", "else"}) rest.erase(k);
  for (const char* kw : {"dependentSchemas", "dependencies"}) {
    auto d = s.find(kw);
    if (d == s.end()) continue;
    if (std::string(kw) == "dependentSchemas" && !use_dependent) {
      rest.erase(kw);
      continue;
    }
    if (!d->is_object()) fail("keyword '", kw, "' must be an object");
    for (auto it = d->begin(); it != d->end(); ++it) {
      if (it.value().is_array()) continue;  // dependentRequired form: the object emitter's
      if (!is_true_schema(it.value())) {
        f.clauses.push_back(Json{{"if", Json{{"required", Json::array({it.key()})}}}, {"then", it.value()}});
      }
      rest[kw].erase(it.key());
    }
    if (rest[kw].empty()) rest.erase(kw);
  }
  return f;
}

const Json& Normalizer::deref(const Json& s, bool extra_siblings) {
  const Json* cur = &s;
  for (int hops = 0; hops < cx_.limits.ref_hops; ++hops) {
    if (!cur->is_object()) return *cur;
    auto r = cur->find("$ref");
    if (r == cur->end()) return *cur;
    if (!r->is_string()) fail("keyword '$ref' must be a string");
    bool siblings = hops == 0 && extra_siblings;
    for (auto it = cur->begin(); it != cur->end(); ++it)
      if (it.key() != "$ref" && is_known_assertion(it.key())) siblings = true;
    if (siblings && !cx_.draft_pre2019) return *cur;
    const Json* target = cx_.refs->resolve(r->get<std::string>());
    if (!target) fail("unresolvable $ref '", r->get<std::string>(), "'");
    cur = target;
  }
  fail("$ref chain longer than ", cx_.limits.ref_hops, " hops");
}

// A member of allOf/anyOf ready for merging: $ref replaced by allOf [target].
Json Normalizer::deref_for_merge(const Json& m) {
  if (m.is_boolean()) return m.get<bool>() ? Json::object() : Json(false);
  if (!m.is_object()) fail("a schema must be an object or a boolean");
  const Json& d = deref(m);
  if (!d.is_object()) return d.is_boolean() && !d.get<bool>() ? Json(false) : Json::object();
  if (d.contains("$ref")) {
    Json out = d;
    const Json* target = cx_.refs->resolve(d["$ref"].get<std::string>());
    if (!target) fail("unresolvable $ref '", d["$ref"].get<std::string>(), "'");
    out.erase("$ref");
    Json all = out.contains("allOf") ? out["allOf"] : Json::array();
    all.push_back(*target);
    out["allOf"] = all;
    return out;
  }
  return d;
}

// ------------------------------------------------------------------ oneOf exclusivity

// oneOf as a union is exact when no two branches overlap. Branches that may overlap are made
// exclusive by conjoining the negation of each branch they may overlap with: `not` of it when
// that is a form Emitter::apply_not() handles (negatable()), else its negation as a positive
// schema (schema_negate.cpp), with the disjuncts that cannot meet branch i left out. Where a
// negation has no exact form, or branch i would expand into more than
// CompileLimits::negation_cases alternatives, the exclusivity is unenforced (strict: refused).
// branch[i] is replaced by the exclusive form where needed.
bool Normalizer::exclusive_one_of(const Json& alts, const Node& rest, std::vector<const Json*>& branch) {
  size_t n = alts.size();
  std::vector<std::vector<size_t>> overlaps(n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j)
      if (!provably_disjoint(alts[i], alts[j], 0)) overlaps[i].push_back(j), overlaps[j].push_back(i);
  auto pair = [](size_t i, size_t j) {
    return "branches " + std::to_string(std::min(i, j)) + " and " + std::to_string(std::max(i, j)) + " may both match";
  };
  std::vector<Json> exclusive(n);
  bool by_negation = false;
  for (size_t i = 0; i < n; ++i) {
    if (overlaps[i].empty()) continue;
    NegationContext c = negation_context({&rest.keywords, &alts[i]});
    Json all = Json::array({alts[i]});
    size_t cases = 1;
    for (size_t j : overlaps[i]) {
      if (negatable(alts[j])) {
        all.push_back(Json{{"not", alts[j]}});
        continue;
      }
      // Lenient mode keeps the union (noted as unenforced) rather than risk refusing a schema
      // it compiles for a negation past the emitter's state bound.
      if (cx_.options.mode == SchemaMode::kLenient) {
        cx_.unenforced("oneOf", pair(i, j) + "; exclusivity is left to the validator");
        return false;
      }
      std::string why;
      std::optional<Json> neg = negation(alts[j], c, &why);
      if (!neg) {
        cx_.unenforced("oneOf", pair(i, j) + " and branch " + std::to_string(j) +
                                    " has no exact negation: " + why);
        return false;
      }
      by_negation = true;
      // Disjuncts that cannot meet branch i (or the schema around the oneOf) are left out.
      Json kept = Json::array();
      for (auto& d : neg->is_object() && neg->contains("anyOf") ? (*neg)["anyOf"] : Json::array({*neg}))
        if (!provably_disjoint(alts[i], d, 0) && !provably_disjoint(rest.keywords, d, 0)) kept.push_back(d);
      Json conj = kept.empty() ? Json(false) : kept.size() == 1 ? kept[0] : Json{{"anyOf", kept}};
      cases *= alternatives(conj);
      if (cases > cx_.limits.negation_cases) {
        cx_.unenforced("oneOf", pair(i, j) + " and making branch " + std::to_string(i) + " exclusive needs more than " +
                                    std::to_string(cx_.limits.negation_cases) + " alternatives");
        return false;
      }
      all.push_back(std::move(conj));
    }
    exclusive[i] = Json{{"allOf", std::move(all)}};
  }
  for (size_t i = 0; i < n; ++i)
    if (!exclusive[i].is_null()) branch[i] = &cx_.keep(std::move(exclusive[i]));
  return by_negation;
}

// The `not` forms Emitter::apply_not() handles without error: {} / booleans, a type, string /
// boolean / null values, a compilable pattern, one required name.
bool Normalizer::negatable(const Json& n_in) {
  const Json& n = n_in.is_object() && n_in.contains("$ref") ? deref(n_in) : n_in;
  if (n.is_boolean() || is_true_schema(n)) return true;
  if (!n.is_object()) return false;
  std::set<std::string> keys;
  for (auto it = n.begin(); it != n.end(); ++it)
    if (!annotation_keywords().count(it.key())) keys.insert(it.key());
  // Not {type: integer} among numbers: the numbers that are not integers have a rule in draft 4
  // only (Emitter::non_integer_rule).
  if (keys == std::set<std::string>{"type"}) {
    return cx_.draft4 || !(type_set(n).count("integer") && !type_set(n).count("number"));
  }
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
      cx_.regex(n["pattern"].get<std::string>());
    } catch (const Error&) {
      return false;
    }
    return true;
  }
  return keys == std::set<std::string>{"required"} && n["required"].is_array() && n["required"].size() == 1 &&
         n["required"][0].is_string();
}

// The JSON types a schema allows, from `type` and, without it, from its enum/const values.
std::set<std::string> Normalizer::value_types(const Json& s) {
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

// Conservative: true only when no instance satisfies both schemas (disjoint types, values of
// one failing the other, or a property both constrain, one requires, and whose schemas are
// disjoint or forbidden by the other). False means "may overlap".
bool Normalizer::provably_disjoint(const Json& a_in, const Json& b_in, int depth) {
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
      if (cx_.validator.validate_subschema(*x, v) && cx_.validator.validate_subschema(*y, v)) any = true;
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

}  // namespace ringlm::guided::schema
