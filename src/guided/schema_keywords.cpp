#include "guided/schema_keywords.h"

#include <cmath>

#include "guided/validator.h"
#include "util/error.h"

namespace ringlm::guided::schema {

const std::unordered_set<std::string>& annotation_keywords() {
  static const std::unordered_set<std::string> k = {
      "$schema", "$id", "id", "$comment", "$defs", "definitions", "title", "description", "default",
      "examples", "example", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
      "contentSchema", "$anchor", "$vocabulary", "nullable", "discriminator", "xml", "externalDocs",
      "markdownDescription", "enumDescriptions"};
  return k;
}

bool is_known_assertion(const std::string& k) {
  static const std::unordered_set<std::string> kw = {
      "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
      "maxLength", "minLength", "pattern", "items", "additionalItems", "prefixItems", "contains", "minContains",
      "maxContains", "maxItems", "minItems", "uniqueItems", "maxProperties", "minProperties", "required",
      "properties", "patternProperties", "additionalProperties", "dependencies", "dependentRequired",
      "dependentSchemas", "propertyNames", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref",
      "format", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef",
      kSomeItemKeyword, kSomeKeyKeyword};
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

std::set<std::string> type_meet(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  for (auto& t : a) {
    if (b.count(t)) out.insert(t);
    else if ((t == "number" && b.count("integer")) || (t == "integer" && b.count("number"))) out.insert("integer");
  }
  return out;
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

std::string pointer_escape(const std::string& k) {
  std::string out;
  for (char c : k) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out.push_back(c);
  }
  return out;
}

Json all_of2(const Json& a, const Json& b) {
  if (is_false_schema(a) || is_false_schema(b)) return false;
  if (is_true_schema(a)) return b;
  if (is_true_schema(b)) return a;
  if (a == b) return a;  // idempotent; also keeps {"$ref": X} AND {"$ref": X} a (memoised) $ref
  return Json{{"allOf", Json::array({a, b})}};
}

Json conditional_of(const Json& s) {
  if (!s.is_object() || !s.contains("if") || !(s.contains("then") || s.contains("else"))) return nullptr;
  Json c = Json::object();
  for (const char* k : {"if", "then", "else"})
    if (s.contains(k)) c[k] = s[k];
  return c;
}

}  // namespace ringlm::guided::schema
