// if/then/else as disjoint cases (schema_passes.h ConditionalGroup): part of the normalisation
// pass. The emitter generates each case as its own alternative (Emitter::emit_conditional).
#include <algorithm>
#include <map>

#include "guided/schema_passes.h"
#include "util/error.h"

namespace ringlm::guided::schema {

using Clause = ConditionalGroup::Clause;
using PropCase = ConditionalGroup::PropCase;

ConditionalGroup::Clause Normalizer::parse_clause(const Json& c, std::vector<std::string>& props) {
  auto note_prop = [&](const std::string& p) {
    if (std::find(props.begin(), props.end(), p) == props.end()) props.push_back(p);
  };
  Clause cl;
  if (c.contains("then")) cl.then_s = &c["then"];
  if (c.contains("else")) cl.else_s = &c["else"];
  const Json& cond = c["if"].is_object() && c["if"].contains("$ref") ? deref(c["if"]) : c["if"];
  if (cond.is_boolean() || is_true_schema(cond)) {
    (cond.is_boolean() && !cond.get<bool>() ? cl.never : cl.always) = true;
    return cl;
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
  return cl;
}

// const / enum (with type and annotations): the finite set of values the test accepts.
bool Normalizer::value_set(const Json& sch, Json* out) {
  if (!sch.is_object() || !(sch.contains("const") || sch.contains("enum"))) return false;
  for (auto it = sch.begin(); it != sch.end(); ++it)
    if (it.key() != "const" && it.key() != "enum" && it.key() != "type" && !annotation_keywords().count(it.key()))
      return false;
  Json cand = sch.contains("const") ? Json::array({sch["const"]}) : sch["enum"];
  if (!cand.is_array()) fail("keyword 'enum' must be an array");
  *out = Json::array();
  for (auto& v : cand)
    if (cx_.validator.validate_subschema(sch, v)) out->push_back(v);
  return true;
}

// The cases of one tested property: absent; then either present, or each class of the tested
// values (by the set of clauses whose test they satisfy) and every other value, split by the
// property's one schema test when there is one.
std::vector<PropCase> Normalizer::property_cases(const std::string& p, const std::vector<Clause>& cs) {
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
  std::vector<PropCase> out;
  out.push_back({PropCase::kAbsent, Json(), {}});
  if (value_tests.empty() && other_tests.empty()) {
    out.push_back({PropCase::kPresent, Json(), {}});
    return out;
  }
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
    if (test && cx_.validator.validate_subschema(*test, all[k])) sig[k].insert(test_clauses.begin(), test_clauses.end());
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
  return out;
}

ConditionalGroup Normalizer::conditional_group(const std::vector<Json>& clauses) {
  ConditionalGroup g;
  for (const Json& c : clauses) g.clauses.push_back(parse_clause(c, g.props));
  for (const std::string& p : g.props) g.cases.push_back(property_cases(p, g.clauses));
  for (auto& c : g.cases) {
    g.combinations *= c.size();
    if (g.combinations > cx_.limits.conditional_cases) {
      fail("unsupported keyword 'if' (more than ", cx_.limits.conditional_cases, " cases)");
    }
  }
  return g;
}

namespace {

void add_chosen(const Clause& cl, bool holds, std::vector<Json>& parts) {
  const Json* branch = holds ? cl.then_s : cl.else_s;
  if (branch) parts.push_back(*branch);
}

// The constraint a property's case puts on the object; sets *negates when it needs `not`.
Json case_constraint(const PropCase& pc, const std::string& p, bool* negates) {
  switch (pc.kind) {
    case PropCase::kAbsent: return Json{{"not", Json{{"required", Json::array({p})}}}};
    case PropCase::kPresent: return Json{{"required", Json::array({p})}};
    case PropCase::kValues:
      return Json{{"required", Json::array({p})}, {"properties", Json{{p, Json{{"enum", pc.values}}}}}};
    case PropCase::kOther: break;
  }
  Json parts = Json::array();
  if (!pc.values.empty()) parts.push_back(Json{{"not", Json{{"enum", pc.values}}}}), *negates = true;
  if (pc.schema && pc.match) parts.push_back(*pc.schema);
  if (pc.schema && !pc.match) parts.push_back(Json{{"not", *pc.schema}}), *negates = true;
  return Json{{"required", Json::array({p})}, {"properties", Json{{p, Json{{"allOf", parts}}}}}};
}

}  // namespace

// Each combination of the properties' cases is one alternative, with every clause's outcome
// known there. A case that negates a test (a value outside the tested ones, or not matching
// the tested schema) needs `not` on that property; when the grammar cannot express that
// negation the `if` is what is unsupported (Emitter::emit_case).
std::vector<ConditionalCase> Normalizer::object_cases(const ConditionalGroup& g) {
  std::vector<ConditionalCase> out;
  std::vector<size_t> pick(g.props.size(), 0);
  for (size_t n = 0; n < g.combinations; ++n) {
    ConditionalCase c;
    c.parts.push_back(Json{{"type", "object"}});
    for (size_t pi = 0; pi < g.props.size(); ++pi)
      c.parts.push_back(case_constraint(g.cases[pi][pick[pi]], g.props[pi], &c.negates));
    for (size_t i = 0; i < g.clauses.size(); ++i) {
      const Clause& cl = g.clauses[i];
      bool holds = !cl.never;
      if (!cl.always && !cl.never) {
        for (auto& r : cl.required) {
          size_t pi = size_t(std::find(g.props.begin(), g.props.end(), r) - g.props.begin());
          if (g.cases[pi][pick[pi]].kind == PropCase::kAbsent) holds = false;
        }
        for (auto& [name, sch] : cl.tests) {
          size_t pi = size_t(std::find(g.props.begin(), g.props.end(), name) - g.props.begin());
          const PropCase& pc = g.cases[pi][pick[pi]];
          if (pc.kind != PropCase::kAbsent && !pc.holds.count(i)) holds = false;
        }
      }
      add_chosen(cl, holds, c.parts);
    }
    out.push_back(std::move(c));
    for (size_t pi = 0; pi < g.props.size(); ++pi) {  // next combination
      if (++pick[pi] < g.cases[pi].size()) break;
      pick[pi] = 0;
    }
  }
  return out;
}

// Values that are not objects: `if` holds unless it requires an object (properties and
// required say nothing about other types).
std::optional<ConditionalCase> Normalizer::non_object_case(const ConditionalGroup& g, const Node& rest) {
  std::set<std::string> others = type_set(rest.keywords);
  others.erase("object");
  if (others.empty()) return std::nullopt;
  ConditionalCase c;
  c.parts.push_back(Json{{"type", type_json(others)}});
  for (auto& cl : g.clauses) add_chosen(cl, !cl.never && (cl.always || !cl.needs_object), c.parts);
  return c;
}

}  // namespace ringlm::guided::schema
