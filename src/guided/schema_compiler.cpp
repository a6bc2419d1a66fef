// JSON Schema -> Grammar: the entry points (schema_compiler.h) and the compile Context the
// passes share (schema_passes.h). The passes: schema_normalize.cpp, schema_conditionals.cpp and
// schema_merge.cpp normalise; schema_emit*.cpp emit.
#include "guided/schema_compiler.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "guided/schema_passes.h"
#include "util/error.h"

namespace ringlm::guided {
namespace schema {

Context::Context(const Json& schema, const CompileOptions& opts)
    : root(schema), options(opts), limits(options.limits), validator(schema, [] {
        ValidatorOptions o;
        o.assert_formats = true;
        return o;
      }()) {
  if (root.is_object()) {
    auto sv = root.find("$schema");
    if (sv != root.end() && sv->is_string()) {
      std::string uri = sv->get<std::string>();
      draft4 = uri.find("draft-04") != std::string::npos;
      draft_pre2019 = uri.find("draft-0") != std::string::npos;
    }
  }
  draft = schema_draft(root);
  refs = std::make_unique<RefResolver>(root, draft4);
  index_pointers(root, "");
}

void Context::index_pointers(const Json& s, const std::string& ptr) {
  pointers.emplace(&s, ptr);
  if (s.is_object()) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.value().is_object() || it.value().is_array()) index_pointers(it.value(), ptr + "/" + pointer_escape(it.key()));
    }
  } else if (s.is_array()) {
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i].is_object() || s[i].is_array()) index_pointers(s[i], ptr + "/" + std::to_string(i));
  }
}

const Json& Context::keep(Json j) {
  arena_.push_back(std::move(j));
  return arena_.back();
}

const Node& Context::keep(Node n) {
  nodes_.push_back(std::move(n));
  return nodes_.back();
}

const CpDfa& Context::regex(const std::string& pattern) {
  auto it = regex_cache_.find(pattern);
  if (it == regex_cache_.end()) it = regex_cache_.emplace(pattern, compile_regex(pattern, true, limits.regex)).first;
  return it->second;
}

void Context::unenforced(const std::string& keyword, const std::string& why) {
  if (options.mode == SchemaMode::kStrict) fail("unsupported keyword '", keyword, "' (", why, ")");
  std::string ptr = where.empty() ? "" : *where.back().pointer;
  std::string note = keyword + " at " + ptr + "/" + pointer_escape(keyword) + ": " + why;
  if (std::find(unenforced_notes.begin(), unenforced_notes.end(), note) == unenforced_notes.end()) {
    unenforced_notes.push_back(note);
  }
}

DepthGuard::DepthGuard(Context& cx) : d_(cx.depth) {
  if (++d_ > cx.limits.depth) {
    fail("schema nesting deeper than ", cx.limits.depth, " levels (recursion through allOf/anyOf?)");
  }
}

}  // namespace schema

namespace {

using schema::sep_colon;
using schema::sep_comma;

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

}  // namespace

SchemaMode parse_schema_mode(const std::string& text) {
  if (text == "strict") return SchemaMode::kStrict;
  if (text == "lenient") return SchemaMode::kLenient;
  fail("schema mode must be 'strict' or 'lenient', got '", text, "'");
}

namespace {

// The compiler writes negations with keywords of its own ("$ringlm:someItem", ...; validator.h)
// that its grammar and validator enforce; in a user schema such a key is refused rather than
// enforced, since any other validator would ignore it. (A property named so is refused too:
// this walk does not tell keywords from property names.) Iterative: schemas can nest deeply.
void refuse_internal_keywords(const Json& schema) {
  std::vector<std::pair<const Json*, std::string>> todo{{&schema, ""}};
  while (!todo.empty()) {
    auto [node, pointer] = todo.back();
    todo.pop_back();
    if (node->is_object()) {
      for (auto it = node->begin(); it != node->end(); ++it) {
        if (it.key().rfind("$ringlm:", 0) == 0)
          fail("keyword '", it.key(), "' at ", pointer.empty() ? "/" : pointer, " is reserved for ringlm's own use");
        todo.emplace_back(&it.value(), pointer + "/" + it.key());
      }
    } else if (node->is_array()) {
      for (std::size_t i = 0; i < node->size(); ++i) todo.emplace_back(&(*node)[i], pointer + "/" + std::to_string(i));
    }
  }
}

}  // namespace

CompiledSchema compile_schema(const Json& schema, const CompileOptions& options) {
  refuse_internal_keywords(schema);
  schema::Context cx(schema, options);
  schema::Emitter emitter(cx);
  return emitter.run();
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
