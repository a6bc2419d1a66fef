#include "guided/ref_resolver.h"

#include <charconv>
#include <optional>
#include <string>

namespace ringlm::guided {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A '%' not followed by two hex digits stays as it is: the pointer then names a key with a
// '%' in it, which is what a schema author who did not mean an escape wrote.
std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const int hi = s[i] == '%' && i + 2 < s.size() ? hex_digit(s[i + 1]) : -1;
    const int lo = hi >= 0 ? hex_digit(s[i + 2]) : -1;
    if (lo >= 0) {
      out.push_back(char(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// An array index token, or nothing when it is not one or names no element of an array of
// `size` (a 30-digit index is simply absent, not an overflow).
std::optional<size_t> array_index(const std::string& key, size_t size) {
  if (key.empty() || key.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  size_t idx = 0;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), idx);
  if (ec != std::errc{} || end != key.data() + key.size() || idx >= size) return std::nullopt;
  return idx;
}

// Strips the fragment-less base of a URI reference ("a/b.json#/x" -> "a/b.json").
std::string uri_base(const std::string& ref) {
  auto h = ref.find('#');
  return h == std::string::npos ? ref : ref.substr(0, h);
}

// Last path segment of an id/ref base, so relative ids resolve without a full URI resolver.
std::string last_segment(const std::string& base) {
  auto slash = base.rfind('/');
  return slash == std::string::npos ? base : base.substr(slash + 1);
}

}  // namespace

const Json* resolve_json_pointer(const Json& root, std::string_view pointer) {
  std::string p = percent_decode(pointer);
  const Json* cur = &root;
  if (p.empty()) return cur;
  if (p[0] != '/') return nullptr;
  size_t i = 1;
  while (true) {
    size_t j = p.find('/', i);
    std::string token = p.substr(i, j == std::string::npos ? std::string::npos : j - i);
    std::string key;
    for (size_t k = 0; k < token.size(); ++k) {
      if (token[k] == '~' && k + 1 < token.size() && token[k + 1] == '1') {
        key.push_back('/'), ++k;
      } else if (token[k] == '~' && k + 1 < token.size() && token[k + 1] == '0') {
        key.push_back('~'), ++k;
      } else {
        key.push_back(token[k]);
      }
    }
    if (cur->is_object()) {
      auto it = cur->find(key);
      if (it == cur->end()) return nullptr;
      cur = &*it;
    } else if (cur->is_array()) {
      const auto idx = array_index(key, cur->size());
      if (!idx) return nullptr;
      cur = &(*cur)[*idx];
    } else {
      return nullptr;
    }
    if (j == std::string::npos) break;
    i = j + 1;
  }
  return cur;
}

RefResolver::RefResolver(const Json& root, bool draft4) : root_(&root), draft4_(draft4) { index(root); }

  
void RefResolver::index(const Json& s) {
  if (s.is_object()) {
    auto id = s.find(draft4_ ? "id" : "$id");
    if (id != s.end() && id->is_string()) {
      std::string v = id->get<std::string>();
      if (!v.empty() && v[0] == '#') {
        ids_[v] = &s;
      } else {
        ids_[uri_base(v)] = &s;
        ids_[last_segment(uri_base(v))] = &s;
      }
    }
    auto anchor = s.find("$anchor");
    if (anchor != s.end() && anchor->is_string()) ids_["#" + anchor->get<std::string>()] = &s;
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() == "enum" || it.key() == "const") continue;
      index(it.value());
    }
  } else if (s.is_array()) {
    for (auto& v : s) index(v);
  }
}

const Json* RefResolver::resolve(const std::string& ref) const {
  if (ref == "#") return root_;
  if (ref.rfind("#/", 0) == 0) return resolve_json_pointer(*root_, std::string_view(ref).substr(1));
  if (ref[0] == '#') {
    auto it = ids_.find(ref);
    return it == ids_.end() ? nullptr : it->second;
  }
  std::string base = uri_base(ref);
  auto it = ids_.find(base);
  if (it == ids_.end()) it = ids_.find(last_segment(base));
  if (it == ids_.end()) return nullptr;
  auto h = ref.find('#');
  if (h == std::string::npos || h + 1 == ref.size()) return it->second;
  std::string frag = ref.substr(h + 1);
  if (frag[0] == '/') return resolve_json_pointer(*it->second, frag);
  auto a = ids_.find("#" + frag);
  return a == ids_.end() ? nullptr : a->second;
}


}  // namespace ringlm::guided
