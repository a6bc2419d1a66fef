#include "guided/validator.h"

#include <cmath>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "guided/formats.h"
#include "guided/number_value.h"
#include "guided/ref_resolver.h"
#include "util/error.h"

namespace ringlm::guided {

bool json_equal(const Json& a, const Json& b) {
  // Numbers by the decimal each stands for (number_value.h): 2 == 2.0 == 20e-1, and an integer
  // past 2^53 is not equal to the double its digits round to.
  if (a.is_number() && b.is_number()) return json_numbers_equal(a, b);
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!json_equal(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto jt = b.find(it.key());
      if (jt == b.end() || !json_equal(it.value(), *jt)) return false;
    }
    return true;
  }
  return a == b;
}

namespace {

bool is_integer_value(const Json& v) {
  if (v.is_number_integer()) return true;
  if (v.is_number_float()) {
    double d = v.get<double>();
    return std::isfinite(d) && std::floor(d) == d;
  }
  return false;
}

}  // namespace

struct Validator::Impl {
  Json root;
  ValidatorOptions options;
  bool draft4 = false;
  int draft = 2020;  // keywords newer than the draft are unknown there, so ignored
  bool ref_overrides_siblings = false;  // drafts 4-7: $ref ignores sibling keywords
  std::unique_ptr<RefResolver> refs;
  mutable std::mutex regex_mutex;
  mutable std::unordered_map<std::string, std::shared_ptr<CpDfa>> regex_cache;
  const CpDfa& regex(const std::string& pattern) const {
    std::lock_guard<std::mutex> lock(regex_mutex);
    auto it = regex_cache.find(pattern);
    if (it == regex_cache.end()) {
      it = regex_cache.emplace(pattern, std::make_shared<CpDfa>(compile_regex(pattern, true))).first;
    }
    return *it->second;
  }

  bool fail_at(std::string* why, const std::string& path, const std::string& msg) const {
    if (why && why->empty()) *why = (path.empty() ? std::string("/") : path) + ": " + msg;
    return false;
  }

  bool check_type(const std::string& t, const Json& v) const {
    if (t == "null") return v.is_null();
    if (t == "boolean") return v.is_boolean();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    if (t == "integer") return draft4 ? v.is_number_integer() : is_integer_value(v);
    return false;
  }

  bool check(const Json& s, const Json& v, const std::string& path, std::string* why, int depth) const {
    if (depth > 200) fail("schema recursion deeper than 200 levels at ", path);
    if (s.is_boolean()) return s.get<bool>() ? true : fail_at(why, path, "false schema");
    if (!s.is_object()) return true;

    if (auto r = s.find("$ref"); r != s.end() && r->is_string()) {
      const Json* target = refs->resolve(r->get<std::string>());
      if (!target) fail("unresolvable $ref '", r->get<std::string>(), "'");
      if (!check(*target, v, path, why, depth + 1)) return false;
      if (ref_overrides_siblings) return true;
    }

    if (auto t = s.find("type"); t != s.end()) {
      bool ok = false;
      if (t->is_string()) {
        ok = check_type(t->get<std::string>(), v);
      } else if (t->is_array()) {
        for (auto& x : *t)
          if (x.is_string() && check_type(x.get<std::string>(), v)) ok = true;
      }
      if (!ok) return fail_at(why, path, "type mismatch (expected " + t->dump() + ")");
    }
    if (auto e = s.find("enum"); e != s.end() && e->is_array()) {
      bool ok = false;
      for (auto& x : *e)
        if (json_equal(x, v)) ok = true;
      if (!ok) return fail_at(why, path, "not one of enum");
    }
    if (auto c = s.find("const"); c != s.end() && !json_equal(*c, v)) return fail_at(why, path, "not const");

    if (v.is_number()) {
      if (!check_number(s, v, path, why)) return false;
    } else if (v.is_string()) {
      if (!check_string(s, v, path, why)) return false;
    } else if (v.is_array()) {
      if (!check_array(s, v, path, why, depth)) return false;
    } else if (v.is_object()) {
      if (!check_object(s, v, path, why, depth)) return false;
    }

    if (auto a = s.find("allOf"); a != s.end() && a->is_array()) {
      for (auto& sub : *a)
        if (!check(sub, v, path, why, depth + 1)) return false;
    }
    if (auto a = s.find("anyOf"); a != s.end() && a->is_array()) {
      bool ok = false;
      for (auto& sub : *a)
        if (check(sub, v, path, nullptr, depth + 1)) {
          ok = true;
          break;
        }
      if (!ok) return fail_at(why, path, "no anyOf branch matches");
    }
    if (auto a = s.find("oneOf"); a != s.end() && a->is_array()) {
      int n = 0;
      for (auto& sub : *a)
        if (check(sub, v, path, nullptr, depth + 1)) ++n;
      if (n != 1) return fail_at(why, path, "oneOf matched " + std::to_string(n) + " branches");
    }
    if (auto n = s.find("not"); n != s.end()) {
      if (check(*n, v, path, nullptr, depth + 1)) return fail_at(why, path, "matches 'not' schema");
    }
    if (auto i = s.find("if"); i != s.end() && draft >= 7) {
      if (check(*i, v, path, nullptr, depth + 1)) {
        if (auto t = s.find("then"); t != s.end() && !check(*t, v, path, why, depth + 1)) return false;
      } else {
        if (auto e = s.find("else"); e != s.end() && !check(*e, v, path, why, depth + 1)) return false;
      }
    }
    return true;
  }

  bool check_number(const Json& s, const Json& v, const std::string& path, std::string* why) const {
    double x = v.get<double>();
    auto num = [&](const char* k) -> const Json* {
      auto it = s.find(k);
      return it != s.end() && it->is_number() ? &*it : nullptr;
    };
    auto bool_kw = [&](const char* k) {
      auto it = s.find(k);
      return it != s.end() && it->is_boolean() && it->get<bool>();
    };
    // Integers compared exactly where both sides are integers (beyond 2^53 doubles round).
    auto cmp = [&](const Json& bound) -> int {
      if (v.is_number_integer() && bound.is_number_integer()) {
        if (v.is_number_unsigned() || bound.is_number_unsigned()) {
          long double a = v.get<long double>(), b = bound.get<long double>();
          return a < b ? -1 : a > b ? 1 : 0;
        }
        int64_t a = v.get<int64_t>(), b = bound.get<int64_t>();
        return a < b ? -1 : a > b ? 1 : 0;
      }
      double b = bound.get<double>();
      return x < b ? -1 : x > b ? 1 : 0;
    };
    if (const Json* m = num("minimum")) {
      int c = cmp(*m);
      if (c < 0 || (c == 0 && bool_kw("exclusiveMinimum"))) return fail_at(why, path, "below minimum");
    }
    if (const Json* m = num("maximum")) {
      int c = cmp(*m);
      if (c > 0 || (c == 0 && bool_kw("exclusiveMaximum"))) return fail_at(why, path, "above maximum");
    }
    if (const Json* m = num("exclusiveMinimum"); m && cmp(*m) <= 0) return fail_at(why, path, "not above exclusiveMinimum");
    if (const Json* m = num("exclusiveMaximum"); m && cmp(*m) >= 0) return fail_at(why, path, "not below exclusiveMaximum");
    if (const Json* m = num("multipleOf")) {
      if (v.is_number_integer() && m->is_number_integer() && m->get<int64_t>() != 0) {
        if (v.is_number_unsigned()) {
          if (v.get<uint64_t>() % uint64_t(std::llabs(m->get<int64_t>())) != 0) return fail_at(why, path, "not a multipleOf");
        } else if (v.get<int64_t>() % m->get<int64_t>() != 0) {
          return fail_at(why, path, "not a multipleOf");
        }
      } else {
        double d = m->get<double>();
        double q = x / d;
        if (!std::isfinite(q)) return fail_at(why, path, "not a multipleOf");
        if (std::fabs(q - std::round(q)) > 1e-9 * std::max(1.0, std::fabs(q))) return fail_at(why, path, "not a multipleOf");
      }
    }
    return true;
  }

  bool check_string(const Json& s, const Json& v, const std::string& path, std::string* why) const {
    const std::string& str = v.get_ref<const std::string&>();
    auto has_len = s.contains("minLength") || s.contains("maxLength") || s.contains("pattern");
    std::u32string cps;
    if (has_len) cps = utf8_to_u32(str);
    if (auto m = s.find("minLength"); m != s.end() && m->is_number() && double(cps.size()) < m->get<double>()) {
      return fail_at(why, path, "shorter than minLength");
    }
    if (auto m = s.find("maxLength"); m != s.end() && m->is_number() && double(cps.size()) > m->get<double>()) {
      return fail_at(why, path, "longer than maxLength");
    }
    if (auto p = s.find("pattern"); p != s.end() && p->is_string()) {
      if (!regex(p->get<std::string>()).matches(cps)) return fail_at(why, path, "does not match pattern " + p->dump());
    }
    if (options.assert_formats) {
      if (auto f = s.find("format"); f != s.end() && f->is_string()) {
        if (!check_format(f->get<std::string>(), str)) return fail_at(why, path, "not a valid " + f->get<std::string>());
      }
    }
    return true;
  }

  bool check_array(const Json& s, const Json& v, const std::string& path, std::string* why, int depth) const {
    size_t n = v.size();
    if (auto m = s.find("minItems"); m != s.end() && m->is_number() && double(n) < m->get<double>()) return fail_at(why, path, "fewer than minItems");
    if (auto m = s.find("maxItems"); m != s.end() && m->is_number() && double(n) > m->get<double>()) return fail_at(why, path, "more than maxItems");
    if (auto u = s.find("uniqueItems"); u != s.end() && u->is_boolean() && u->get<bool>()) {
      for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j)
          if (json_equal(v[i], v[j])) return fail_at(why, path, "items not unique");
    }
    size_t prefix = 0;
    auto prefix_items = s.find("prefixItems");
    auto items = s.find("items");
    const Json* rest = nullptr;
    if (prefix_items != s.end() && prefix_items->is_array()) {
      prefix = prefix_items->size();
      for (size_t i = 0; i < std::min(n, prefix); ++i)
        if (!check((*prefix_items)[i], v[i], path + "/" + std::to_string(i), why, depth + 1)) return false;
      if (items != s.end()) rest = &*items;
    } else if (items != s.end() && items->is_array()) {
      prefix = items->size();
      for (size_t i = 0; i < std::min(n, prefix); ++i)
        if (!check((*items)[i], v[i], path + "/" + std::to_string(i), why, depth + 1)) return false;
      if (auto a = s.find("additionalItems"); a != s.end()) rest = &*a;
    } else if (items != s.end()) {
      rest = &*items;
    }
    if (rest) {
      for (size_t i = prefix; i < n; ++i)
        if (!check(*rest, v[i], path + "/" + std::to_string(i), why, depth + 1)) return false;
    }
    if (auto c = s.find("contains"); c != s.end() && draft >= 6) {
      size_t hits = 0;
      for (size_t i = 0; i < n; ++i)
        if (check(*c, v[i], path, nullptr, depth + 1)) ++hits;
      double mn = 1;
      if (auto m = s.find("minContains"); m != s.end() && m->is_number() && draft >= 2019) mn = m->get<double>();
      if (double(hits) < mn) return fail_at(why, path, "contains not satisfied");
      if (auto m = s.find("maxContains");
          m != s.end() && m->is_number() && draft >= 2019 && double(hits) > m->get<double>()) {
        return fail_at(why, path, "more than maxContains matches");
      }
    }
    if (auto c = s.find(kSomeItemKeyword); c != s.end()) {
      bool hit = false;
      for (size_t i = 0; i < n && !hit; ++i) hit = check(*c, v[i], path, nullptr, depth + 1);
      if (!hit) return fail_at(why, path, "no item of the internal some-item schema");
    }
    return true;
  }

  // kSomeKeyKeyword: some key outside `except` / `exceptPatterns` with a value valid under `value`.
  bool some_key(const Json& spec, const Json& v, const std::string& path, int depth) const {
    for (auto it = v.begin(); it != v.end(); ++it) {
      bool listed = false;
      if (auto e = spec.find("except"); e != spec.end())
        for (auto& name : *e) listed = listed || name == it.key();
      std::u32string k32 = utf8_to_u32(it.key());
      if (auto e = spec.find("exceptPatterns"); e != spec.end() && !listed)
        for (auto& p : *e) listed = listed || regex(p.get<std::string>()).matches(k32);
      if (auto e = spec.find("withinPatterns"); e != spec.end() && !listed)
        for (auto& p : *e) listed = listed || !regex(p.get<std::string>()).matches(k32);
      if (listed) continue;
      auto val = spec.find("value");
      if (val == spec.end() || check(*val, it.value(), path + "/" + it.key(), nullptr, depth + 1)) return true;
    }
    return false;
  }

  bool check_object(const Json& s, const Json& v, const std::string& path, std::string* why, int depth) const {
    size_t n = v.size();
    if (auto m = s.find("minProperties"); m != s.end() && m->is_number() && double(n) < m->get<double>()) return fail_at(why, path, "fewer than minProperties");
    if (auto m = s.find("maxProperties"); m != s.end() && m->is_number() && double(n) > m->get<double>()) return fail_at(why, path, "more than maxProperties");
    if (auto r = s.find("required"); r != s.end() && r->is_array()) {
      for (auto& k : *r)
        if (k.is_string() && !v.contains(k.get<std::string>())) return fail_at(why, path, "missing required property '" + k.get<std::string>() + "'");
    }
    auto props = s.find("properties");
    auto pattern_props = s.find("patternProperties");
    auto additional = s.find("additionalProperties");
    auto names = s.find("propertyNames");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string& key = it.key();
      std::string sub = path + "/" + key;
      bool matched = false;
      if (props != s.end() && props->is_object()) {
        if (auto p = props->find(key); p != props->end()) {
          matched = true;
          if (!check(*p, it.value(), sub, why, depth + 1)) return false;
        }
      }
      if (pattern_props != s.end() && pattern_props->is_object()) {
        std::u32string k32 = utf8_to_u32(key);
        for (auto pp = pattern_props->begin(); pp != pattern_props->end(); ++pp) {
          if (regex(pp.key()).matches(k32)) {
            matched = true;
            if (!check(pp.value(), it.value(), sub, why, depth + 1)) return false;
          }
        }
      }
      if (!matched && additional != s.end()) {
        if (!check(*additional, it.value(), sub, why, depth + 1)) return false;
      }
      if (names != s.end() && !check(*names, Json(key), sub, why, depth + 1)) return false;
    }
    auto dependent = [&](const Json& deps, bool schemas_allowed, bool arrays_allowed) {
      for (auto d = deps.begin(); d != deps.end(); ++d) {
        if (!v.contains(d.key())) continue;
        if (d.value().is_array() && arrays_allowed) {
          for (auto& k : d.value())
            if (k.is_string() && !v.contains(k.get<std::string>())) return fail_at(why, path, "dependency '" + d.key() + "' requires '" + k.get<std::string>() + "'");
        } else if (schemas_allowed && !check(d.value(), v, path, why, depth + 1)) {
          return false;
        }
      }
      return true;
    };
    if (draft >= 2019) {
      if (auto d = s.find("dependentRequired"); d != s.end() && d->is_object() && !dependent(*d, false, true)) return false;
      if (auto d = s.find("dependentSchemas"); d != s.end() && d->is_object() && !dependent(*d, true, false)) return false;
    }
    if (auto d = s.find("dependencies"); d != s.end() && d->is_object() && !dependent(*d, true, true)) return false;
    if (auto k = s.find(kSomeKeyKeyword); k != s.end()) {
      for (auto& spec : k->is_array() ? *k : Json::array({*k}))
        if (spec.is_object() && !some_key(spec, v, path, depth)) return fail_at(why, path, "no key of the internal some-key schema");
    }
    return true;
  }
};

Validator::Validator(Json schema, ValidatorOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->root = std::move(schema);
  impl_->options = options;
  impl_->draft4 = options.draft == 4;
  impl_->draft = options.draft ? options.draft : schema_draft(impl_->root);
  impl_->ref_overrides_siblings = options.draft == 4 || options.draft == 6 || options.draft == 7;
  if (options.draft == 0 && impl_->root.is_object()) {
    auto sv = impl_->root.find("$schema");
    if (sv != impl_->root.end() && sv->is_string()) {
      std::string uri = sv->get<std::string>();
      impl_->draft4 = uri.find("draft-04") != std::string::npos;
      impl_->ref_overrides_siblings = uri.find("draft-0") != std::string::npos;
    }
  }
  impl_->refs = std::make_unique<RefResolver>(impl_->root, impl_->draft4);
}

Validator::~Validator() = default;

int schema_draft(const Json& root) {
  if (!root.is_object()) return 2020;
  auto sv = root.find("$schema");
  if (sv == root.end() || !sv->is_string()) return 2020;
  const std::string& uri = sv->get_ref<const std::string&>();
  if (uri.find("draft-04") != std::string::npos || uri.find("draft-03") != std::string::npos) return 4;
  if (uri.find("draft-06") != std::string::npos) return 6;
  if (uri.find("draft-07") != std::string::npos) return 7;
  if (uri.find("2019-09") != std::string::npos) return 2019;
  return 2020;
}

bool Validator::validate(const Json& instance, std::string* why) const {
  if (why) why->clear();
  return impl_->check(impl_->root, instance, "", why, 0);
}

bool Validator::validate_subschema(const Json& schema, const Json& instance) const {
  return impl_->check(schema, instance, "", nullptr, 0);
}

}  // namespace ringlm::guided
