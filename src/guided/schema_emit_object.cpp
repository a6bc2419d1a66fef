// The emission pass for objects. Declared properties are emitted in schema order, each
// optional one skippable; dependentRequired pairs are flags on the states; additional keys
// (patternProperties, additionalProperties, propertyNames) are a key language per schema,
// listed as optional entries when small and finite, else a loop after the declared entries.
#include <algorithm>
#include <map>
#include <tuple>

#include "guided/schema_passes.h"
#include "util/error.h"

namespace ringlm::guided::schema {

struct Emitter::Entry {
  std::string name;
  const Json* schema;
  bool required;
};

struct Emitter::Extra {
  CpDfa keys;
  const Json* schema;
};

// dependentRequired / dependencies (array form): "if entry a is present, entry b is too".
struct Emitter::Dep {
  size_t a, b;
};

// An object schema's keywords, read once, and what the steps below derive from them.
struct Emitter::ObjectShape {
  const Json* props = nullptr;
  const Json* add = nullptr;
  std::vector<std::pair<std::string, const Json*>> patterns;
  std::set<std::string> required;
  std::set<std::string> forbidden;  // names a `not` requires absent
  const Json* names = nullptr;      // propertyNames
  std::vector<Entry> entries;       // declared entries, in emission order
  std::vector<Dep> deps;
  std::vector<Extra> extras;        // additional key languages
  std::vector<const Json*> some_keys;  // kSomeKeyKeyword specs: each needs a key outside a list
};

// One way to write an additional key: its key language, its value's schema, and the some-key
// specs it satisfies (their "seen" flags).
struct Emitter::KeyStep {
  uint32_t key_rule;
  const Json* schema;
  uint32_t seen;
};

namespace {
constexpr size_t kMaxSomeKeys = 3;
// Key classes overlapping patternProperties may split the undeclared keys into (each is a key
// rule and a value rule; n patterns can make 2^n - 1).
constexpr size_t kMaxKeyClasses = 32;
// Object state flag of some-key spec i: a key it asks for was written (the top bits).
uint32_t seen_bit(size_t i) { return 1u << (31 - i); }
}  // namespace

void Emitter::object(const Json& s, uint32_t from, uint32_t to) {
  ObjectShape o;
  read_object(s, o);
  o.forbidden = not_.keys;
  if (!declared_entries(o)) return;      // unsatisfiable
  if (!dependency_entries(s, o)) return;  // unsatisfiable
  {
    std::vector<std::string> names;
    for (auto& e : o.entries) names.push_back(e.name);
    note_order(std::move(names));
  }
  extra_entries(o);
  finite_extras(o);
  object_states(s, o, from, to);
}

void Emitter::read_object(const Json& s, ObjectShape& o) {
  static const Json kTrue = true;
  if (auto p = s.find("properties"); p != s.end()) {
    if (!p->is_object()) fail("keyword 'properties' must be an object");
    o.props = &*p;
  }
  o.add = &kTrue;
  if (auto a = s.find("additionalProperties"); a != s.end()) o.add = &*a;
  if (auto pp = s.find("patternProperties"); pp != s.end()) {
    if (!pp->is_object()) fail("keyword 'patternProperties' must be an object");
    for (auto it = pp->begin(); it != pp->end(); ++it) o.patterns.emplace_back(it.key(), &it.value());
  }
  if (auto r = s.find("required"); r != s.end()) {
    if (!r->is_array()) fail("keyword 'required' must be an array");
    for (auto& x : *r) {
      if (!x.is_string()) fail("keyword 'required' must list strings");
      o.required.insert(x.get<std::string>());
    }
  }
  if (auto pn = s.find("propertyNames"); pn != s.end()) o.names = &*pn;
  if (auto k = s.find(kSomeKeyKeyword); k != s.end()) {
    if (k->is_array()) {
      for (auto& spec : *k) o.some_keys.push_back(&spec);
    } else {
      o.some_keys.push_back(&*k);
    }
    for (const Json* spec : o.some_keys)
      if (!spec->is_object()) fail("internal keyword '", kSomeKeyKeyword, "' must hold objects");
    if (o.some_keys.size() > kMaxSomeKeys) {
      fail("unsupported keyword 'additionalProperties' (more than ", kMaxSomeKeys, " negated in one object)");
    }
  }
}

// The ways to write a key the specs in `applicable` ask for, with value schema `schema`: the
// flags of the specs whose value is `true` always, and each subset of the others, its value
// schemas conjoined.
void Emitter::seen_variants(const ObjectShape& o, uint32_t applicable, const Json* schema,
                            std::vector<std::pair<const Json*, uint32_t>>& out) {
  uint32_t always = 0;
  std::vector<std::pair<uint32_t, const Json*>> valued;
  for (size_t i = 0; i < o.some_keys.size(); ++i) {
    if (!(applicable & seen_bit(i))) continue;
    auto v = o.some_keys[i]->find("value");
    if (v == o.some_keys[i]->end() || is_true_schema(*v)) {
      always |= seen_bit(i);
    } else {
      valued.emplace_back(seen_bit(i), &*v);
    }
  }
  for (uint32_t m = 0; m < (1u << valued.size()); ++m) {
    uint32_t bits = always;
    Json value = *schema;
    for (size_t j = 0; j < valued.size(); ++j) {
      if (!(m & (1u << j))) continue;
      bits |= valued[j].first;
      value = all_of2(value, *valued[j].second);
    }
    out.emplace_back(m == 0 ? schema : &cx_.keep(std::move(value)), bits);
  }
}

// A key of the kind the some-key keyword asks for: not listed, matching none of its patterns.
bool Emitter::outside_some_key(const ObjectShape& o, size_t i, const std::string& name) {
  const Json& spec = *o.some_keys[i];
  if (auto e = spec.find("except"); e != spec.end())
    for (auto& x : *e)
      if (x == name) return false;
  if (auto e = spec.find("exceptPatterns"); e != spec.end())
    for (auto& p : *e)
      if (pattern_dfa(p.get<std::string>()).matches(utf8_to_u32(name))) return false;
  if (auto e = spec.find("withinPatterns"); e != spec.end())
    for (auto& p : *e)
      if (!pattern_dfa(p.get<std::string>()).matches(utf8_to_u32(name))) return false;
  return true;
}

// The additional key languages as steps; with some-key specs each splits by which specs'
// lists hold its keys, and each part into the variants seen_variants() lists.
std::vector<Emitter::KeyStep> Emitter::extra_steps(const ObjectShape& o) {
  std::vector<KeyStep> out;
  const RegexLimits& rl = limits_.regex;
  std::vector<CpDfa> listed;
  for (const Json* spec : o.some_keys) {
    std::vector<std::u32string> names;
    if (auto e = spec->find("except"); e != spec->end())
      for (auto& x : *e) names.push_back(utf8_to_u32(x.get<std::string>()));
    CpDfa l = dfa_literals(names);
    if (auto e = spec->find("exceptPatterns"); e != spec->end())
      for (auto& p : *e) l = dfa_union(l, pattern_dfa(p.get<std::string>()), rl);
    if (auto e = spec->find("withinPatterns"); e != spec->end())
      for (auto& p : *e) l = dfa_union(l, dfa_complement(pattern_dfa(p.get<std::string>())), rl);
    listed.push_back(std::move(l));
  }
  std::vector<CpDfa> others;
  for (auto& l : listed) others.push_back(dfa_complement(l));
  const size_t m = o.some_keys.size();
  for (auto& x : o.extras) {
    for (uint32_t outside = 0; outside < (1u << m); ++outside) {
      CpDfa keys = x.keys;
      uint32_t applicable = 0;
      for (size_t i = 0; i < m && !keys.is_empty_language(); ++i) {
        bool out_i = outside & (1u << i);
        keys = dfa_intersect(keys, out_i ? others[i] : listed[i], rl);
        if (out_i) applicable |= seen_bit(i);
      }
      if (keys.is_empty_language()) continue;
      uint32_t r = key_rule(keys);
      std::vector<std::pair<const Json*, uint32_t>> variants;
      seen_variants(o, applicable, x.schema, variants);
      for (auto& [sch, bits] : variants) out.push_back({r, sch, bits});
    }
  }
  return out;
}

// The schema of property `name`: its declared schema AND every matching patternProperties
// schema; additionalProperties when neither applies.
const Json* Emitter::entry_schema(const ObjectShape& o, const std::string& name, const Json* declared) {
  std::vector<const Json*> parts;
  if (declared) parts.push_back(declared);
  auto k32 = utf8_to_u32(name);
  for (auto& [p, sch] : o.patterns) {
    if (pattern_dfa(p).matches(k32)) parts.push_back(sch);
  }
  if (parts.empty()) parts.push_back(o.add);
  if (parts.size() == 1) return parts[0];
  Json all = Json::array();
  for (auto* x : parts) all.push_back(*x);
  return &cx_.keep(Json{{"allOf", all}});
}

bool Emitter::name_ok(const ObjectShape& o, const std::string& name) {
  if (o.forbidden.count(name)) return false;
  return !o.names || cx_.validator.validate_subschema(*o.names, Json(name));
}

// Declared entries: properties in order, then required names not in properties. False when a
// required property can never be present.
bool Emitter::declared_entries(ObjectShape& o) {
  if (o.props) {
    for (auto it = o.props->begin(); it != o.props->end(); ++it) {
      const Json* sch = entry_schema(o, it.key(), &it.value());
      bool req = o.required.count(it.key()) > 0;
      if (!name_ok(o, it.key()) || is_false_schema(*sch)) {
        if (req) return false;
        continue;
      }
      o.entries.push_back({it.key(), sch, req});
    }
  }
  for (auto& r : o.required) {
    if (o.props && o.props->contains(r)) continue;
    const Json* sch = entry_schema(o, r, nullptr);
    if (!name_ok(o, r) || is_false_schema(*sch)) return false;
    o.entries.push_back({r, sch, true});
  }
  return true;
}

// dependentRequired / dependencies (array form). With the fixed property order each pair is one
// flag: A before B -> emitting A makes B required; B before A -> skipping B forbids A. Names
// only reachable as additional keys become optional entries. False when unsatisfiable.
bool Emitter::dependency_entries(const Json& s, ObjectShape& o) {
  auto entry_index = [&](const std::string& name) -> int64_t {
    for (size_t i = 0; i < o.entries.size(); ++i)
      if (o.entries[i].name == name) return int64_t(i);
    return -1;
  };
  auto can_be_extra = [&](const std::string& name) {
    if (o.forbidden.count(name) || !name_ok(o, name)) return false;
    return !is_false_schema(*entry_schema(o, name, nullptr));
  };
  for (const char* kw : {"dependentRequired", "dependencies"}) {
    auto d = s.find(kw);
    if (d == s.end() || (std::string(kw) == "dependentRequired" && cx_.draft < 2019)) continue;
    if (!d->is_object()) fail("keyword '", kw, "' must be an object");
    for (auto it = d->begin(); it != d->end(); ++it) {
      if (!it.value().is_array()) {
        if (is_true_schema(it.value())) continue;
        fail("unsupported keyword '", kw, "' (schema form)");
      }
      int64_t ia = entry_index(it.key());
      if (ia < 0) {
        if (!can_be_extra(it.key())) continue;  // A can never be present
        o.entries.push_back({it.key(), entry_schema(o, it.key(), nullptr), false});
        ia = int64_t(o.entries.size() - 1);
      }
      for (auto& dep : it.value()) {
        if (!dep.is_string()) fail("keyword '", kw, "' must list property names");
        std::string bn = dep.get<std::string>();
        if (bn == it.key()) continue;
        int64_t ib = entry_index(bn);
        if (ib < 0) {
          if (!can_be_extra(bn)) {
            if (o.entries[size_t(ia)].required) return false;
            fail("unsupported keyword '", kw, "' (dependency on a property that cannot be present)");
          }
          o.entries.push_back({bn, entry_schema(o, bn, nullptr), false});
          ib = int64_t(o.entries.size() - 1);
        }
        if (o.entries[size_t(ib)].required) continue;
        o.deps.push_back({size_t(ia), size_t(ib)});
      }
    }
  }
  const size_t max_deps = std::min<size_t>(limits_.dependencies, 32);
  if (o.deps.size() > max_deps) {
    fail("unsupported keyword 'dependentRequired' (more than ", max_deps, " dependencies)");
  }
  return true;
}

// Additional entries: keys not declared; per pattern, and the rest for additionalProperties.
void Emitter::extra_entries(ObjectShape& o) {
  const RegexLimits& rl = limits_.regex;
  std::vector<std::u32string> declared;
  for (auto& e : o.entries) declared.push_back(utf8_to_u32(e.name));
  for (auto& f : o.forbidden) declared.push_back(utf8_to_u32(f));
  if (o.props)
    for (auto it = o.props->begin(); it != o.props->end(); ++it) declared.push_back(utf8_to_u32(it.key()));
  for (auto& r : o.required) declared.push_back(utf8_to_u32(r));
  CpDfa not_declared = dfa_complement(dfa_literals(declared));
  CpDfa name_dfa = dfa_universal();
  int64_t name_min = 0, name_max = -1;
  if (o.names) name_dfa = names_dfa(*o.names, &name_min, &name_max);
  CpDfa any_pattern;
  bool have_any_pattern = false;
  // A key must satisfy the schema of every pattern it matches, so overlapping patterns split
  // the undeclared keys into classes by the set of patterns they match (disjoint key
  // languages), each with the allOf of those schemas: exact, and a class holding a `false`
  // schema is forbidden. Disjoint patterns give one class each, in pattern order, as before.
  struct KeyClass {
    CpDfa keys;
    std::vector<const Json*> schemas;
  };
  std::vector<KeyClass> classes;
  for (auto& [p, sch] : o.patterns) {
    CpDfa k = dfa_intersect(dfa_intersect(pattern_dfa(p), not_declared, rl), name_dfa, rl);
    any_pattern = have_any_pattern ? dfa_union(any_pattern, pattern_dfa(p), rl) : pattern_dfa(p);
    have_any_pattern = true;
    if (k.is_empty_language()) continue;
    std::vector<KeyClass> next;
    for (auto& c : classes) {
      CpDfa both = dfa_intersect(c.keys, k, rl);
      if (both.is_empty_language()) {
        next.push_back(std::move(c));
        continue;
      }
      CpDfa only_c = dfa_intersect(c.keys, dfa_complement(k), rl);
      k = dfa_intersect(k, dfa_complement(c.keys), rl);
      std::vector<const Json*> with = c.schemas;
      with.push_back(sch);
      if (!only_c.is_empty_language()) next.push_back({std::move(only_c), std::move(c.schemas)});
      next.push_back({std::move(both), std::move(with)});
    }
    if (!k.is_empty_language()) next.push_back({std::move(k), {sch}});
    classes = std::move(next);
    if (classes.size() > kMaxKeyClasses) {
      fail("unsupported keyword 'patternProperties' (overlapping patterns split the keys into more than ",
           kMaxKeyClasses, " classes)");
    }
  }
  for (auto& c : classes) {
    if (std::any_of(c.schemas.begin(), c.schemas.end(), [](const Json* x) { return is_false_schema(*x); })) continue;
    const Json* sch = c.schemas[0];
    if (c.schemas.size() > 1) {
      Json all = Json::array();
      for (const Json* x : c.schemas) all.push_back(*x);
      sch = &cx_.keep(Json{{"allOf", std::move(all)}});
    }
    o.extras.push_back({std::move(c.keys), sch});
  }
  if (!is_false_schema(*o.add)) {
    CpDfa k = dfa_intersect(not_declared, name_dfa, rl);
    if (have_any_pattern) k = dfa_intersect(k, dfa_complement(any_pattern), rl);
    if (!k.is_empty_language()) o.extras.push_back({std::move(k), o.add});
  }
  extra_min_ = name_min;
  extra_max_ = name_max;
}

// Additional keys drawn from a small finite set (patternProperties "^(a|b)$", a propertyNames
// enum) become optional declared entries in code point order, so no key can repeat and
// minProperties only counts distinct keys. Larger or infinite key languages stay a loop, and
// the Matcher keeps their keys distinct (Grammar::distinct_keys).
void Emitter::finite_extras(ObjectShape& o) {
  std::vector<Extra> kept;
  bool added = false;
  for (auto& x : o.extras) {
    auto words = dfa_words(x.keys, extra_min_, extra_max_, limits_.finite_key_words);
    if (!words || o.entries.size() + words->size() > limits_.declared_keys) {
      kept.push_back(std::move(x));
      continue;
    }
    for (auto& w : *words) {
      std::string name;
      for (char32_t c : w) append_utf8(name, uint32_t(c));
      o.entries.push_back({std::move(name), x.schema, false});
    }
    added = true;
  }
  o.extras = std::move(kept);
  if (added) {
    std::vector<std::string> names;
    for (auto& e : o.entries) names.push_back(e.name);
    note_order(std::move(names));
  }
  if (!o.extras.empty()) b_.require_distinct_keys();
}

// The object's states: state(i, k, f) is before entry i (i == n: the additional phase) with k
// entries emitted (k saturates at cap when maxProperties is unbounded; k > 0 means the next
// entry needs a comma) and f the dependency flags.
void Emitter::object_states(const Json& s, ObjectShape& o, uint32_t from, uint32_t to) {
  int64_t min_p = count_kw(s, "minProperties", 0), max_p = count_kw(s, "maxProperties", -1);
  if (max_p >= 0 && min_p > max_p) return;
  int64_t n_required = 0;
  for (auto& e : o.entries) n_required += e.required;
  if (max_p >= 0 && n_required > max_p) return;
  int64_t cap = std::max<int64_t>(1, max_p >= 0 ? max_p : min_p);
  if (cap > limits_.count) fail("minProperties/maxProperties above ", limits_.count, " are not supported");

  std::string comma = sep_comma(cx_.options.whitespace), colon = sep_colon(cx_.options.whitespace);
  size_t n = o.entries.size();
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
  if (o.deps.size() + o.some_keys.size() > 32) fail("unsupported keyword 'dependentRequired' (too many dependencies)");
  std::vector<KeyStep> steps = extra_steps(o);
  uint32_t all_seen = 0;
  for (size_t i = 0; i < o.some_keys.size(); ++i) all_seen |= seen_bit(i);
  for (size_t w = 0; w < work.size(); ++w) {
    auto [i, k, f] = work[w];
    uint32_t st = ids[{i, k, f}];
    bool can_add = max_p < 0 || k < max_p;
    if (i < n) {
      const Entry& e = o.entries[i];
      // Skipping entry i: not if a dependency made it required; records "absent" flags.
      bool may_skip = !e.required;
      uint32_t f_skip = f, f_emit = f;
      bool may_emit = can_add;
      for (size_t d = 0; d < o.deps.size(); ++d) {
        uint32_t bit = 1u << d;
        const Dep& dp = o.deps[d];
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
        uint32_t applicable = 0;
        for (size_t j = 0; j < o.some_keys.size(); ++j)
          if (outside_some_key(o, j, e.name)) applicable |= seen_bit(j);
        std::vector<std::pair<const Json*, uint32_t>> variants;
        seen_variants(o, applicable, e.schema, variants);
        for (auto& [sch, bits] : variants) b_.call(after_key, rule_for(*sch), get(i + 1, next_count(k), f_emit | bits));
      }
    } else {
      if (k >= min_p && (f & all_seen) == all_seen) b_.literal(st, to, "}");
      if (!can_add) continue;
      for (auto& step : steps) {
        uint32_t key_start = st;
        if (k > 0) {
          key_start = b_.new_state();
          b_.literal(st, key_start, comma);
        }
        uint32_t after_key = b_.new_state(), after_colon = b_.new_state();
        b_.call(key_start, step.key_rule, after_key);
        b_.literal(after_key, after_colon, colon);
        b_.call(after_colon, rule_for(*step.schema), get(n, next_count(k), f | step.seen));
      }
    }
  }
}

uint32_t Emitter::key_rule(const CpDfa& keys) {
  if (keys.accepts_everything() && extra_min_ == 0 && extra_max_ < 0) return plain_string_rule();
  return string_rule(keys, extra_min_, extra_max_);
}

const CpDfa& Emitter::pattern_dfa(const std::string& p) {
  try {
    return cx_.regex(p);
  } catch (const Error& e) {
    fail("unsupported keyword 'patternProperties': ", e.what());
  }
}

// propertyNames as a key language: only its string keywords (anything else is refused). A
// `$ref` is followed (deref keeps it when siblings count, 2019+, and that is refused below);
// `enum` / `const` keep the keys among their strings (other values never equal a key).
CpDfa Emitter::names_dfa(const Json& pn_in, int64_t* mn, int64_t* mx) {
  const Json& pn = norm_.deref(pn_in);
  if (is_true_schema(pn)) {
    *mn = 0, *mx = -1;
    return dfa_universal();
  }
  if (!pn.is_object()) fail("unsupported keyword 'propertyNames'");
  for (auto it = pn.begin(); it != pn.end(); ++it) {
    const std::string& k = it.key();
    if (annotation_keywords().count(k) || k == "pattern" || k == "minLength" || k == "maxLength" || k == "format" ||
        k == "enum" || k == "const") {
      continue;
    }
    if (k == "type" && it.value() == "string") continue;
    fail("unsupported keyword 'propertyNames' (only pattern/minLength/maxLength/format/enum/const)");
  }
  CpDfa d = string_dfa(pn, no_extras(), mn, mx);
  for (const char* kw : {"enum", "const"}) {
    auto v = pn.find(kw);
    if (v == pn.end()) continue;
    if (std::string(kw) == "enum" && !v->is_array()) fail("keyword 'enum' must be an array");
    std::vector<std::u32string> words;
    for (const Json& x : std::string(kw) == "enum" ? *v : Json::array({*v}))
      if (x.is_string()) words.push_back(utf8_to_u32(x.get<std::string>()));
    d = dfa_intersect(d, dfa_literals(words), limits_.regex);
  }
  return d;
}

}  // namespace ringlm::guided::schema
