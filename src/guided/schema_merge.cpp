// The allOf meet of two schemas (schema_ir.h merge_into): part of the normalisation pass.
#include <algorithm>

#include "guided/number_regex.h"
#include "guided/regex.h"
#include "guided/schema_ir.h"
#include "guided/schema_keywords.h"
#include "guided/validator.h"
#include "util/error.h"

namespace ringlm::guided::schema {

void Extras::append(const Extras& o) {
  conditions.insert(conditions.end(), o.conditions.begin(), o.conditions.end());
  nots.insert(nots.end(), o.nots.begin(), o.nots.end());
  patterns.insert(patterns.end(), o.patterns.begin(), o.patterns.end());
  formats.insert(formats.end(), o.formats.begin(), o.formats.end());
}

std::string Extras::key() const {
  std::string out;
  for (const auto* list : {&conditions, &nots, &patterns, &formats}) {
    out += Json(*list).dump();
    out.push_back('\x02');
  }
  return out;
}

const Extras& no_extras() {
  static const Extras none;
  return none;
}

namespace {

bool is_object_keyword(const std::string& k) {
  return k == "properties" || k == "additionalProperties" || k == "patternProperties";
}

// properties / additionalProperties / patternProperties: with both sides declaring some, each
// property takes the allOf of its two schemas (a side without it: its additionalProperties).
void merge_object_keywords(Json& a, const Json& b) {
  bool a_obj = a.contains("properties") || a.contains("additionalProperties") || a.contains("patternProperties");
  bool b_obj = b.contains("properties") || b.contains("additionalProperties") || b.contains("patternProperties");
  if (!b_obj) return;
  if (!a_obj) {
    for (const char* k : {"properties", "additionalProperties", "patternProperties"})
      if (b.contains(k)) a[k] = b[k];
    return;
  }
  Json pa = a.value("properties", Json::object()), pb = b.value("properties", Json::object());
  Json adda = a.contains("additionalProperties") ? a["additionalProperties"] : Json(true);
  Json addb = b.contains("additionalProperties") ? b["additionalProperties"] : Json(true);
  const Json ppa = a.value("patternProperties", Json::object()), ppb = b.value("patternProperties", Json::object());
  // With patterns, the merged object keeps both sides' patterns (the emitter applies every
  // pattern a key matches, overlapping ones included, to declared and undeclared keys alike),
  // and additionalProperties becomes the meet of both, applied to keys matching no pattern of
  // either side. That is exact unless a key matching only the other side's patterns would owe a
  // side's non-trivial additionalProperties, which the merged form cannot say: refused.
  if ((!ppb.empty() && !is_true_schema(adda)) || (!ppa.empty() && !is_true_schema(addb))) {
    fail("unsupported keyword 'patternProperties' combined with properties inside allOf");
  }
  auto matches_any = [](const Json& pp, const std::string& key) {
    const std::u32string k = utf8_to_u32(key);
    for (auto it = pp.begin(); it != pp.end(); ++it) {
      try {
        if (compile_regex(it.key(), true).matches(k)) return true;
      } catch (const Error& e) {
        fail("unsupported keyword 'patternProperties': ", e.what());
      }
    }
    return false;
  };
  // What one side asks of a property the other side declares: its own declared schema, else
  // nothing beyond the patterns (kept in the merge) when one matches, else additionalProperties.
  auto side = [&](const Json& props, const Json& pp, const Json& add, const std::string& key) {
    if (props.contains(key)) return props[key];
    return matches_any(pp, key) ? Json(true) : add;
  };
  Json props = Json::object();
  for (auto it = pa.begin(); it != pa.end(); ++it) props[it.key()] = all_of2(it.value(), side(pb, ppb, addb, it.key()));
  for (auto it = pb.begin(); it != pb.end(); ++it) {
    if (!pa.contains(it.key())) props[it.key()] = all_of2(side(pa, ppa, adda, it.key()), it.value());
  }
  a["properties"] = props;
  if (!ppa.empty() || !ppb.empty()) {
    Json pp = ppa;
    for (auto it = ppb.begin(); it != ppb.end(); ++it) pp[it.key()] = pp.contains(it.key()) ? all_of2(pp[it.key()], it.value()) : it.value();
    a["patternProperties"] = pp;
  }
  Json add = all_of2(adda, addb);
  if (is_true_schema(add)) {
    a.erase("additionalProperties");
  } else {
    a["additionalProperties"] = add;
  }
}

// enum / const of both: the values in both, as an enum.
void merge_values(Json& a, const std::string& k, const Json& v) {
  Json va = k == "enum" ? a[k] : Json::array({a[k]});
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
}

// Keyword k, asserted by both a (as node.keywords[k]) and b (as v): their meet, or an extra.
void merge_keyword(Node& node, const std::string& k, const Json& v) {
  Json& a = node.keywords;
  Json& cur = a[k];
  if (k == "type") {
    std::set<std::string> ta = type_set(a), tb = type_set(Json{{"type", v}});
    cur = type_json(type_meet(ta, tb));
  } else if (k == "required") {
    for (auto& x : v)
      if (std::find(cur.begin(), cur.end(), x) == cur.end()) cur.push_back(x);
  } else if (k == "enum" || k == "const") {
    merge_values(a, k, v);
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
    node.extras.patterns.push_back(v);
  } else if (k == "format") {
    if (cur != v) node.extras.formats.push_back(v);
  } else if (k == "items" || k == "additionalItems" || k == "propertyNames" || k == "contains" ||
             k == "unevaluatedProperties" || k == "unevaluatedItems") {
    if (cur.is_array() || v.is_array()) fail("unsupported keyword '", k, "' (tuple form) in both allOf branches");
    cur = all_of2(cur, v);
  } else if (k == "allOf") {
    for (auto& x : v) cur.push_back(x);
  } else if (k == "not") {
    node.extras.nots.push_back(v);
  } else if (k == "anyOf" || k == "oneOf") {
    Json all = a.contains("allOf") ? a["allOf"] : Json::array();
    all.push_back(Json{{k, v}});
    a["allOf"] = all;
  } else if (k == "multipleOf" && cur.is_number() && v.is_number() && cur != v) {
    // Multiples of both: multiples of their least common multiple (exact, as decimals).
    auto x = decimal_multiple(cur.get<double>()), y = decimal_multiple(v.get<double>());
    auto l = x && y ? lcm_multiple(*x, *y) : std::nullopt;
    if (!l) fail("unsupported keyword 'multipleOf' with different values inside allOf (no exact common multiple)");
    if (l->f == 0) {
      cur = Json(l->a);
    } else {
      double d = double(l->a);
      for (int i = 0; i < l->f; ++i) d /= 10;
      cur = Json(d);
      auto back = decimal_multiple(d);
      if (!back || back->a != l->a || back->f != l->f) fail("unsupported keyword 'multipleOf' with different values inside allOf");
    }
  } else if (k == kSomeKeyKeyword) {
    // Each spec asks for its own key: both lists.
    Json all = cur.is_array() ? cur : Json::array({cur});
    for (auto& spec : v.is_array() ? v : Json::array({v}))
      if (std::find(all.begin(), all.end(), spec) == all.end()) all.push_back(spec);
    cur = all.size() == 1 ? all[0] : all;
  } else if (k == kSomeItemKeyword && cur != v) {
    fail("unsupported keyword 'items' (the negations of two different 'items' schemas meet)");
  } else if (k == "uniqueItems") {
    cur = cur.is_boolean() && v.is_boolean() ? Json(cur.get<bool>() || v.get<bool>()) : v;
  } else if (cur != v && is_known_assertion(k)) {
    fail("unsupported keyword '", k, "' with different values inside allOf");
  }
  // An unknown keyword ("help", "x-order", ...) asserts nothing, here as anywhere else in a
  // schema: two members of an allOf may give it different values, and the first one is kept.
}

}  // namespace

void merge_into(Node& node, const Json& b_in, const Extras& b_extras) {
  if (is_false_schema(node.keywords) || is_false_schema(b_in)) {
    node = Node{Json{{"not", Json::object()}}, {}};
    return;
  }
  if (!node.keywords.is_object()) node.keywords = Json::object();
  const Json b = b_in.is_object() ? b_in : Json::object();
  // Object keywords first (they interact).
  merge_object_keywords(node.keywords, b);
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& k = it.key();
    if (is_object_keyword(k)) continue;
    if (k == "if" || k == "then" || k == "else") continue;  // b's conditional: a clause, below
    if (annotation_keywords().count(k)) continue;
    if (!node.keywords.contains(k)) {
      node.keywords[k] = it.value();
      continue;
    }
    merge_keyword(node, k, it.value());
  }
  node.extras.append(b_extras);
  if (Json clause = conditional_of(b); !clause.is_null()) node.extras.conditions.push_back(std::move(clause));
}

}  // namespace ringlm::guided::schema
