// Negation as a positive schema (Normalizer::negation, schema_passes.h): part of the
// normalisation pass, used to make overlapping oneOf branches exclusive (branch i AND NOT
// branch j) and for `not` forms Emitter::apply_not does not handle.
//
// NOT s is the union of one disjunct per way an instance can fail s: a type s does not allow,
// or, within a type s allows, one keyword for that type failing (`minimum: m` fails as
// `exclusiveMaximum: m`, `required: [a]` as `not: {required: [a]}`, `properties: {p: S}` as
// "p present with a value in NOT S", `items: S` as `contains: NOT S`, allOf as the union of the
// members' negations, anyOf as the allOf of theirs, `not: N` as N). Each disjunct is exact, so
// the union is. Keywords whose failure no such form expresses (uniqueItems, multipleOf, maxContains,
// asserting formats, "some key other than these" without a closed context, ...) make the whole
// negation unavailable: the caller refuses the schema in strict mode.
#include <algorithm>
#include <cmath>

#include "guided/formats.h"
#include "guided/schema_passes.h"
#include "util/error.h"

namespace ringlm::guided::schema {

namespace {

bool refuse(std::string& why, std::string text) {
  if (why.empty()) why = std::move(text);
  return false;
}

// {} or {"type": [...]} for the instances of `types`.
Json typed(const std::set<std::string>& types) {
  Json out = Json::object();
  if (types.size() < 7) out["type"] = type_json(types);
  return out;
}

Json union_of(std::vector<Json> d) {
  if (d.empty()) return false;
  if (d.size() == 1) return std::move(d[0]);
  return Json{{"anyOf", std::move(d)}};
}

bool of_types(const Json& v, const std::set<std::string>& types) {
  if (v.is_null()) return types.count("null");
  if (v.is_boolean()) return types.count("boolean");
  if (v.is_string()) return types.count("string");
  if (v.is_array()) return types.count("array");
  if (v.is_object()) return types.count("object");
  if (types.count("number")) return true;
  double d = v.get<double>();
  return types.count("integer") && std::isfinite(d) && std::floor(d) == d;
}

// A count keyword (minLength, maxItems, ...) as a non-negative integer; nullopt when it is not
// one (the validator compares it as a double; the emitter refuses it).
std::optional<int64_t> whole(const Json& v) {
  if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>()) return std::nullopt;
  if (v.get<double>() > 1e15) return int64_t(1e15);
  return int64_t(v.get<double>());
}

}  // namespace

size_t Normalizer::alternatives(const Json& s) {
  if (!s.is_object()) return 1;
  size_t n = 1;
  if (auto a = s.find("anyOf"); a != s.end() && a->is_array()) {
    n = 0;
    for (auto& x : *a) n += alternatives(x);
  }
  if (auto a = s.find("allOf"); a != s.end() && a->is_array())
    for (auto& x : *a) n *= alternatives(x);
  return n;
}

NegationContext Normalizer::negation_context(const std::vector<const Json*>& parts) {
  NegationContext c;
  for (const Json* p_in : parts) {
    const Json& p = p_in->is_object() && p_in->contains("$ref") ? deref(*p_in) : *p_in;
    if (is_false_schema(p)) c.types.clear();
    if (!p.is_object()) continue;
    c.parts.push_back(&p);
    c.types = type_meet(c.types, value_types(p));
    auto add = p.find("additionalProperties");
    if (add == p.end() || !is_false_schema(*add) || p.contains("patternProperties")) continue;
    std::set<std::string> keys;
    if (auto ps = p.find("properties"); ps != p.end() && ps->is_object())
      for (auto it = ps->begin(); it != ps->end(); ++it) keys.insert(it.key());
    if (c.keys) {
      std::set<std::string> both;
      for (auto& k : keys)
        if (c.keys->count(k)) both.insert(k);
      keys = std::move(both);
    }
    c.keys = std::move(keys);
  }
  return c;
}

// The value of property p of an instance of c (when present): each part's `properties` entry.
NegationContext Normalizer::sub_context(const NegationContext& c, const std::string& property) {
  std::vector<const Json*> parts;
  for (const Json* p : c.parts)
    if (auto ps = p->find("properties"); ps != p->end() && ps->is_object() && ps->contains(property))
      parts.push_back(&(*ps)[property]);
  return negation_context(parts);
}

// An element of an array instance of c past any tuple prefix: each part's `items` schema.
NegationContext Normalizer::items_context(const NegationContext& c) {
  std::vector<const Json*> parts;
  for (const Json* p : c.parts)
    if (auto it = p->find("items"); it != p->end() && !it->is_array() && !p->contains("prefixItems"))
      parts.push_back(&*it);
  return negation_context(parts);
}

std::optional<Json> Normalizer::negation(const Json& s, const NegationContext& c, std::string* why) {
  negation_nodes_ = 0;
  std::vector<Json> out;
  std::string reason;
  if (!negate(s, c, 0, out, reason)) {
    if (why) *why = reason;
    return std::nullopt;
  }
  return union_of(std::move(out));
}

// Appends NOT s (for the instances of c) to `out` as disjuncts; false (with `why`) when some
// part of it has no exact form.
bool Normalizer::negate(const Json& s_in, const NegationContext& c, int depth, std::vector<Json>& out,
                        std::string& why) {
  if (depth > cx_.limits.negation_depth) {
    return refuse(why, "nested deeper than " + std::to_string(cx_.limits.negation_depth) + " levels");
  }
  if (++negation_nodes_ > cx_.limits.negation_size) {
    return refuse(why, "more than " + std::to_string(cx_.limits.negation_size) + " subschemas");
  }
  if (c.types.empty()) return true;  // no instance here
  const Json& s = s_in.is_object() && s_in.contains("$ref") ? deref(s_in) : s_in;
  if (s.is_boolean()) {
    if (!s.get<bool>()) out.push_back(typed(c.types));
    return true;
  }
  if (!s.is_object()) return refuse(why, "a schema that is not an object");
  if (auto r = s.find("$ref"); r != s.end()) {
    // 2019+: $ref with sibling assertions is the allOf of the two.
    const Json* target = cx_.refs->resolve(r->get<std::string>());
    if (!target) fail("unresolvable $ref '", r->get<std::string>(), "'");
    Json rest = s;
    rest.erase("$ref");
    return negate(rest, c, depth + 1, out, why) && negate(*target, c, depth + 1, out, why);
  }
  if (s.contains("enum") || s.contains("const")) {
    // A finite set: everything but the values s accepts (the validator decides each).
    Json vals = s.contains("const") ? Json::array({s["const"]}) : s["enum"];
    if (!vals.is_array()) fail("keyword 'enum' must be an array");
    Json keep = Json::array();
    for (auto& v : vals) {
      if (!of_types(v, c.types) || !cx_.validator.validate_subschema(s, v)) continue;
      if (v.is_number() || v.is_array() || v.is_object()) return refuse(why, "excluding a number, array or object value");
      keep.push_back(v);
    }
    Json d = typed(c.types);
    if (!keep.empty()) d["not"] = Json{{"enum", keep}};
    out.push_back(std::move(d));
    return true;
  }
  return negate_keywords(s, c, depth, out, why);
}

bool Normalizer::negate_keywords(const Json& s, const NegationContext& c, int depth, std::vector<Json>& out,
                                 std::string& why) {
  static const std::set<std::string> handled = {
      "type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
      "format", "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains",
      "minContains", "maxContains", "required", "properties", "patternProperties", "additionalProperties",
      "propertyNames", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies",
      "allOf", "anyOf", "oneOf", "not", "if", "then", "else"};
  for (auto it = s.begin(); it != s.end(); ++it)
    if (is_known_assertion(it.key()) && !handled.count(it.key())) return refuse(why, "keyword '" + it.key() + "'");
  std::set<std::string> st = type_set(s);
  // Instances of a type s does not allow.
  std::set<std::string> other;
  for (auto& t : c.types) {
    if (st.count(t) || (t == "integer" && st.count("number"))) continue;
    if (t == "number" && st.count("integer")) {
      // Draft 4 counts only integer literals as integers (1.0 is not one), a regular language
      // the emitter generates (Emitter::non_integer_rule); later drafts count 1.0 and 1e2 by
      // their double value, which it does not.
      if (!cx_.draft4) return refuse(why, "numbers that are not integers");
      out.push_back(Json{{"type", "number"}, {"not", Json{{"type", "integer"}}}});
      continue;
    }
    other.insert(t);
  }
  if (!other.empty()) out.push_back(Json{{"type", type_json(other)}});
  std::set<std::string> ts = type_meet(c.types, st);
  if (ts.empty()) return true;
  NegationContext within = c;
  within.types = ts;

  auto num = [&](const char* k) -> const Json* {
    auto it = s.find(k);
    return it != s.end() && it->is_number() ? &*it : nullptr;
  };
  auto flag = [&](const char* k) {
    auto it = s.find(k);
    return it != s.end() && it->is_boolean() && it->get<bool>();
  };
  if (ts.count("number") || ts.count("integer")) {
    const char* tn = ts.count("number") ? "number" : "integer";
    auto push = [&](const char* k, const Json& v) { out.push_back(Json{{"type", tn}, {k, v}}); };
    if (const Json* m = num("minimum")) push(flag("exclusiveMinimum") ? "maximum" : "exclusiveMaximum", *m);
    if (const Json* m = num("maximum")) push(flag("exclusiveMaximum") ? "minimum" : "exclusiveMinimum", *m);
    if (const Json* m = num("exclusiveMinimum")) push("maximum", *m);
    if (const Json* m = num("exclusiveMaximum")) push("minimum", *m);
    if (s.contains("multipleOf")) return refuse(why, "keyword 'multipleOf'");
  }
  if (ts.count("string")) {
    if (auto it = s.find("minLength"); it != s.end() && it->is_number() && it->get<double>() > 0) {
      auto m = whole(*it);
      if (!m) return refuse(why, "keyword 'minLength' that is not an integer");
      out.push_back(Json{{"type", "string"}, {"maxLength", *m - 1}});
    }
    if (auto it = s.find("maxLength"); it != s.end() && it->is_number()) {
      auto m = whole(*it);
      if (!m) return refuse(why, "keyword 'maxLength' that is not an integer");
      out.push_back(Json{{"type", "string"}, {"minLength", *m + 1}});
    }
    if (auto p = s.find("pattern"); p != s.end() && p->is_string()) {
      try {
        cx_.regex(p->get<std::string>());
      } catch (const Error& e) {
        return refuse(why, std::string("keyword 'pattern': ") + e.what());
      }
      out.push_back(Json{{"type", "string"}, {"not", Json{{"pattern", *p}}}});
    }
    if (auto f = s.find("format"); f != s.end() && f->is_string()) {
      // A format whose regex is exactly its check fails as "not matching the regex".
      std::string fm = f->get<std::string>();
      int64_t most = -1;
      if (auto re = format_check_regex(fm, &most)) {
        out.push_back(Json{{"type", "string"}, {"not", Json{{"pattern", *re}}}});
        if (most >= 0) out.push_back(Json{{"type", "string"}, {"minLength", most + 1}});
      } else if (is_checked_format(fm) || is_asserting_format(fm)) {
        return refuse(why, "keyword 'format' ('" + fm + "')");
      }
    }
  }
  if (ts.count("array") && !negate_array(s, within, depth, out, why)) return false;
  if (ts.count("object") && !negate_object(s, within, depth, out, why)) return false;
  return negate_combinators(s, c, depth, out, why);
}

bool Normalizer::negate_array(const Json& s, const NegationContext& c, int depth, std::vector<Json>& out,
                              std::string& why) {
  auto count = [&](const char* k) -> std::optional<int64_t> {
    auto it = s.find(k);
    if (it == s.end() || !it->is_number()) return std::nullopt;
    return whole(*it);
  };
  for (const char* k : {"minItems", "maxItems"})
    if (s.contains(k) && s[k].is_number() && !count(k)) return refuse(why, std::string("keyword '") + k + "' that is not an integer");
  if (auto m = count("minItems"); m && *m > 0) out.push_back(Json{{"type", "array"}, {"maxItems", *m - 1}});
  if (auto m = count("maxItems")) out.push_back(Json{{"type", "array"}, {"minItems", *m + 1}});
  if (auto u = s.find("uniqueItems"); u != s.end() && u->is_boolean() && u->get<bool>()) {
    return refuse(why, "keyword 'uniqueItems' (an array with a repeated item)");
  }
  const Json* prefix = nullptr;
  const char* prefix_kw = nullptr;
  const Json* rest = nullptr;
  auto items = s.find("items");
  if (auto p = s.find("prefixItems"); p != s.end() && p->is_array()) {
    prefix = &*p, prefix_kw = "prefixItems";
    if (items != s.end()) rest = &*items;
  } else if (items != s.end() && items->is_array()) {
    prefix = &*items, prefix_kw = "items";
    if (auto a = s.find("additionalItems"); a != s.end()) rest = &*a;
  } else if (items != s.end()) {
    rest = &*items;
  }
  if (prefix) {
    NegationContext any;
    for (size_t i = 0; i < prefix->size(); ++i) {
      std::vector<Json> d;
      if (!negate((*prefix)[i], any, depth + 1, d, why)) return false;
      if (d.empty()) continue;
      Json tuple = Json::array();
      for (size_t k = 0; k < i; ++k) tuple.push_back(true);
      tuple.push_back(union_of(std::move(d)));
      out.push_back(Json{{"type", "array"}, {"minItems", i + 1}, {prefix_kw, tuple}});
    }
    if (rest && is_false_schema(*rest)) {
      out.push_back(Json{{"type", "array"}, {"minItems", prefix->size() + 1}});
    } else if (rest && !is_true_schema(*rest)) {
      return refuse(why, "items after a tuple prefix");
    }
  } else if (rest && !is_true_schema(*rest)) {
    std::vector<Json> d;
    if (!negate(*rest, items_context(c), depth + 1, d, why)) return false;
    if (!d.empty()) {
      // Before draft 6 `contains` is no keyword: the internal some-item keyword says the same.
      out.push_back(Json{{"type", "array"}, {cx_.draft < 6 ? kSomeItemKeyword : "contains", union_of(std::move(d))}});
    }
  }
  if (auto ct = s.find("contains"); ct != s.end() && cx_.draft >= 6) {
    int64_t need = 1;
    if (cx_.draft >= 2019) {
      if (s.contains("maxContains")) return refuse(why, "keyword 'maxContains'");
      if (auto m = s.find("minContains"); m != s.end() && m->is_number()) {
        auto w = whole(*m);
        if (!w) return refuse(why, "keyword 'minContains' that is not an integer");
        need = *w;
      }
    }
    if (need > 1) return refuse(why, "keyword 'minContains' above 1");
    if (need == 1) {
      // Fewer than one match: every item fails the contains schema.
      std::vector<Json> d;
      if (!negate(*ct, NegationContext{}, depth + 1, d, why)) return false;
      out.push_back(Json{{"type", "array"}, {"items", union_of(std::move(d))}});
    }
  }
  return true;
}

bool Normalizer::negate_object(const Json& s, const NegationContext& c, int depth, std::vector<Json>& out,
                               std::string& why) {
  const Json* props = nullptr;
  if (auto p = s.find("properties"); p != s.end() && p->is_object()) props = &*p;
  const Json* pats = nullptr;
  if (auto p = s.find("patternProperties"); p != s.end() && p->is_object()) pats = &*p;
  const Json* add = nullptr;
  if (auto a = s.find("additionalProperties"); a != s.end() && !is_true_schema(*a)) add = &*a;
  auto may_have = [&](const std::string& k) { return !c.keys || c.keys->count(k); };
  // "Property k present with a value failing sch".
  auto failing_value = [&](const std::string& k, const Json& sch) {
    std::vector<Json> d;
    if (!negate(sch, sub_context(c, k), depth + 1, d, why)) return false;
    if (d.empty()) return true;
    out.push_back(Json{{"type", "object"}, {"required", Json::array({k})}, {"properties", Json{{k, union_of(std::move(d))}}}});
    return true;
  };
  // The schemas that apply to the value of key k (declared, matching patterns, else additional).
  auto applying = [&](const std::string& k, bool& ok) {
    Json all = Json::array();
    if (props && props->contains(k)) all.push_back((*props)[k]);
    bool matched = props && props->contains(k);
    if (pats) {
      for (auto it = pats->begin(); it != pats->end(); ++it) {
        try {
          if (!cx_.regex(it.key()).matches(utf8_to_u32(k))) continue;
        } catch (const Error& e) {
          ok = refuse(why, std::string("keyword 'patternProperties': ") + e.what());
          return Json(true);
        }
        matched = true;
        all.push_back(it.value());
      }
    }
    if (!matched && add) all.push_back(*add);
    return all.size() == 1 ? all[0] : Json{{"allOf", all}};
  };
  if (auto r = s.find("required"); r != s.end() && r->is_array()) {
    for (auto& name : *r)
      if (name.is_string()) out.push_back(Json{{"type", "object"}, {"not", Json{{"required", Json::array({name})}}}});
  }
  bool ok = true;
  if (props) {
    for (auto it = props->begin(); it != props->end(); ++it) {
      if (!may_have(it.key())) continue;
      Json sch = applying(it.key(), ok);
      if (!ok || !failing_value(it.key(), sch)) return false;
    }
  }
  bool open_keys = add != nullptr;
  if (pats)
    for (auto it = pats->begin(); it != pats->end(); ++it) open_keys = open_keys || !is_true_schema(it.value());
  if (!c.keys) {
    if (!negate_other_keys(s, depth, out, why)) return false;
  } else {
    if (auto pn = s.find("propertyNames"); pn != s.end() && !is_true_schema(*pn))
      for (auto& k : *c.keys)
        if (!cx_.validator.validate_subschema(*pn, Json(k))) out.push_back(Json{{"type", "object"}, {"required", Json::array({k})}});
  }
  if (open_keys && c.keys) {
    // Keys beyond `properties`, when the context's objects have finitely many: listed.
    for (auto& k : *c.keys) {
      if (props && props->contains(k)) continue;
      Json sch = applying(k, ok);
      if (!ok) return false;
      if (!is_true_schema(sch) && !failing_value(k, sch)) return false;
    }
  }
  auto count = [&](const char* k) -> std::optional<int64_t> {
    auto it = s.find(k);
    if (it == s.end() || !it->is_number()) return std::nullopt;
    auto w = whole(*it);
    if (!w) why = std::string("keyword '") + k + "' that is not an integer";
    return w;
  };
  if (auto m = count("minProperties"); m && *m > 0) out.push_back(Json{{"type", "object"}, {"maxProperties", *m - 1}});
  if (auto m = count("maxProperties")) out.push_back(Json{{"type", "object"}, {"minProperties", *m + 1}});
  if (!why.empty()) return false;
  // Dependencies: "a present and b absent", or "a present and the dependent schema failing".
  for (const char* kw : {"dependentRequired", "dependentSchemas", "dependencies"}) {
    auto d = s.find(kw);
    if (d == s.end() || !d->is_object()) continue;
    if (std::string(kw) != "dependencies" && cx_.draft < 2019) continue;
    for (auto it = d->begin(); it != d->end(); ++it) {
      if (!may_have(it.key())) continue;
      Json has = Json{{"type", "object"}, {"required", Json::array({it.key()})}};
      if (it.value().is_array()) {
        if (std::string(kw) == "dependentSchemas") continue;
        for (auto& b : it.value()) {
          if (!b.is_string() || b == it.key()) continue;
          Json x = has;
          x["not"] = Json{{"required", Json::array({b})}};
          out.push_back(std::move(x));
        }
        continue;
      }
      if (std::string(kw) == "dependentRequired") continue;
      std::vector<Json> neg;
      if (!negate(it.value(), c, depth + 1, neg, why)) return false;
      for (auto& n : neg) out.push_back(Json{{"allOf", Json::array({has, std::move(n)})}});
    }
  }
  return true;
}

// NOT propertyNames: N as "some key failing N", one disjunct per keyword of N: `pattern` as a
// key not matching it, minLength / maxLength as a key shorter / longer (a length pattern),
// const / enum as a key not among the strings, `not: {const / enum}` as one of those keys
// present, a type without string (or `false`) as any key.
bool Normalizer::negate_property_names(const Json& pn, std::vector<Json>& out, std::string& why) {
  auto some_key = [&](Json spec) { out.push_back(Json{{"type", "object"}, {kSomeKeyKeyword, std::move(spec)}}); };
  auto any_key = [&] { out.push_back(Json{{"type", "object"}, {"minProperties", 1}}); };
  auto except_pattern = [&](const std::string& p) {
    try {
      cx_.regex(p);
    } catch (const Error& e) {
      return refuse(why, std::string("keyword 'propertyNames': ") + e.what());
    }
    some_key(Json{{"exceptPatterns", Json::array({p})}});
    return true;
  };
  auto strings = [](const Json& n) {
    Json out = Json::array();
    for (auto& v : n.contains("const") ? Json::array({n["const"]}) : n["enum"])
      if (v.is_string()) out.push_back(v);
    return out;
  };
  auto values_only = [](const Json& n) {
    if (!n.is_object() || (n.contains("const") == n.contains("enum"))) return false;
    if (n.contains("enum") && !n["enum"].is_array()) return false;
    for (auto it = n.begin(); it != n.end(); ++it)
      if (it.key() != "const" && it.key() != "enum" && is_known_assertion(it.key())) return false;
    return true;
  };
  if (is_false_schema(pn)) return any_key(), true;
  if (!pn.is_object()) return refuse(why, "keyword 'propertyNames' (an object with some other key)");
  if (values_only(pn)) return some_key(Json{{"except", strings(pn)}}), true;
  for (auto it = pn.begin(); it != pn.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (!is_known_assertion(k)) continue;
    if (k == "type") {
      if (!type_set(pn).count("string")) any_key();
      continue;
    }
    if (k == "pattern" && v.is_string()) {
      if (!except_pattern(v.get<std::string>())) return false;
      continue;
    }
    auto w = whole(v);
    if ((k == "minLength" || k == "maxLength") && w && *w <= 1000) {
      if (k == "minLength" && *w > 0 && !except_pattern("^[\\s\\S]{" + std::to_string(*w) + ",}$")) return false;
      if (k == "maxLength" && !except_pattern("^[\\s\\S]{0," + std::to_string(*w) + "}$")) return false;
      continue;
    }
    if (k == "not" && values_only(v)) {
      for (auto& name : strings(v)) out.push_back(Json{{"type", "object"}, {"required", Json::array({name})}});
      continue;
    }
    return refuse(why, "keyword 'propertyNames' (an object with some other key)");
  }
  return true;
}

// Without a finite key set in the context: "some key the schema does not declare" failing it,
// as the internal some-key keyword: propertyNames as above; additionalProperties as "some key
// outside `properties` and the patterns, with a value in NOT additionalProperties" (any such
// key when it is false); each patternProperties entry p: P as "some key outside `properties`
// matching p, with a value in NOT P" (exact with overlapping patterns too: a key fails the
// allOf of the patterns it matches iff it fails one of them).
bool Normalizer::negate_other_keys(const Json& s, int depth, std::vector<Json>& out, std::string& why) {
  if (auto pn = s.find("propertyNames"); pn != s.end() && !is_true_schema(*pn)) {
    if (!negate_property_names(*pn, out, why)) return false;
  }
  auto some_key = [&](Json spec, const Json& value) {
    std::vector<Json> d;
    if (!negate(value, NegationContext{}, depth + 1, d, why)) return false;
    if (d.empty()) return true;
    Json v = union_of(std::move(d));
    if (!is_true_schema(v)) spec["value"] = std::move(v);
    out.push_back(Json{{"type", "object"}, {kSomeKeyKeyword, std::move(spec)}});
    return true;
  };
  Json except = Json::array(), patterns = Json::array();
  if (auto ps = s.find("properties"); ps != s.end() && ps->is_object())
    for (auto it = ps->begin(); it != ps->end(); ++it) except.push_back(it.key());
  if (auto pp = s.find("patternProperties"); pp != s.end() && pp->is_object()) {
    for (auto it = pp->begin(); it != pp->end(); ++it) {
      try {
        cx_.regex(it.key());
      } catch (const Error& e) {
        return refuse(why, std::string("keyword 'patternProperties': ") + e.what());
      }
      patterns.push_back(it.key());
      if (is_true_schema(it.value())) continue;
      if (!some_key(Json{{"except", except}, {"withinPatterns", Json::array({it.key()})}}, it.value())) return false;
    }
  }
  auto add = s.find("additionalProperties");
  if (add == s.end() || is_true_schema(*add)) return true;
  return some_key(Json{{"except", except}, {"exceptPatterns", patterns}}, *add);
}

// NOT (B1 OR B2 ...) as one disjunct: the allOf of each member's negation (none when some
// member accepts everything).
bool Normalizer::negated_union(const Json& members, const NegationContext& c, int depth, Json* out, std::string& why) {
  Json all = Json::array();
  for (auto& m : members) {
    std::vector<Json> d;
    if (!negate(m, c, depth + 1, d, why)) return false;
    if (d.empty()) {
      *out = nullptr;
      return true;
    }
    all.push_back(union_of(std::move(d)));
  }
  *out = all.size() == 1 ? all[0] : Json{{"allOf", all}};
  return true;
}

bool Normalizer::negate_combinators(const Json& s, const NegationContext& c, int depth, std::vector<Json>& out,
                                    std::string& why) {
  if (auto a = s.find("allOf"); a != s.end() && a->is_array()) {
    for (auto& m : *a)
      if (!negate(m, c, depth + 1, out, why)) return false;
  }
  for (const char* kw : {"anyOf", "oneOf"}) {
    auto a = s.find(kw);
    if (a == s.end() || !a->is_array()) continue;
    if (std::string(kw) == "oneOf") {
      // NOT oneOf is "none, or two or more": "two or more" is the union of "i and j" over the
      // pairs of branches that may overlap (a positive schema: nothing to negate).
      for (size_t i = 0; i < a->size(); ++i)
        for (size_t j = i + 1; j < a->size(); ++j)
          if (!provably_disjoint((*a)[i], (*a)[j], 0)) out.push_back(Json{{"allOf", Json::array({(*a)[i], (*a)[j]})}});
    }
    Json d;
    if (!negated_union(*a, c, depth, &d, why)) return false;
    if (!d.is_null()) out.push_back(std::move(d));
  }
  if (auto n = s.find("not"); n != s.end()) out.push_back(*n);  // NOT NOT n = n
  if (auto i = s.find("if"); i != s.end() && cx_.draft >= 7) {
    // (if AND NOT then) OR (NOT if AND NOT else).
    if (auto t = s.find("then"); t != s.end()) {
      std::vector<Json> d;
      if (!negate(*t, c, depth + 1, d, why)) return false;
      if (!d.empty()) out.push_back(Json{{"allOf", Json::array({*i, union_of(std::move(d))})}});
    }
    if (auto e = s.find("else"); e != s.end()) {
      Json d;
      if (!negated_union(Json::array({*i, *e}), c, depth, &d, why)) return false;
      // negated_union gives NOT i AND NOT e: the second half of the disjunction.
      if (!d.is_null()) out.push_back(std::move(d));
    }
  }
  return true;
}

}  // namespace ringlm::guided::schema
