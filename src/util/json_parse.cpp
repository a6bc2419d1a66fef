#include "util/json_parse.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "util/error.h"

namespace ringlm {

namespace {

using J = nlohmann::ordered_json;
// ordered_map is a public std::vector of its members; appending to that vector skips the
// linear duplicate search of ordered_map::emplace (duplicates are found here, by hash).
using Members = std::vector<std::pair<const std::string, J>>;

// Below this many members a linear scan is cheaper than building a hash index.
constexpr std::size_t kIndexAfter = 16;

class DomBuilder {
 public:
  explicit DomBuilder(int max_depth) : max_depth_(max_depth) {}

  bool null() { return put(J(nullptr)) != nullptr; }
  bool boolean(bool v) { return put(J(v)) != nullptr; }
  bool number_integer(J::number_integer_t v) { return put(J(v)) != nullptr; }
  bool number_unsigned(J::number_unsigned_t v) { return put(J(v)) != nullptr; }
  bool number_float(J::number_float_t v, const J::string_t&) { return put(J(v)) != nullptr; }
  bool string(J::string_t& v) { return put(J(std::move(v))) != nullptr; }
  bool binary(J::binary_t& v) { return put(J::binary(std::move(v))) != nullptr; }  // never in JSON text
  bool start_object(std::size_t) { return open(J::object()); }
  bool start_array(std::size_t) { return open(J::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(J::string_t& k) {
    Frame& f = stack_.back();
    Members& m = *f.value->get_ptr<J::object_t*>();
    if (!f.index && m.size() >= kIndexAfter) {
      f.index = std::make_unique<std::unordered_map<std::string, std::size_t>>();
      f.index->reserve(m.size() * 2);
      for (std::size_t i = 0; i < m.size(); ++i) f.index->emplace(m[i].first, i);
    }
    std::size_t found = m.size();
    if (f.index) {
      if (auto it = f.index->find(k); it != f.index->end()) found = it->second;
    } else {
      for (std::size_t i = 0; i < m.size(); ++i)
        if (m[i].first == k) found = i;
    }
    if (found == m.size()) {
      if (f.index) f.index->emplace(k, m.size());
      m.emplace_back(std::move(k), J());
    }
    pending_ = &m[found].second;  // a duplicate: the last value wins, in the first one's place
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    std::string reason = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 9: <reason>" -> <reason>
    if (const auto at = reason.find("column "); at != std::string::npos)
      if (const auto colon = reason.find(": ", at); colon != std::string::npos) reason = reason.substr(colon + 2);
    error_ = "invalid JSON at byte " + std::to_string(position > 0 ? position - 1 : 0) + ": " + reason;
    return false;
  }

  J& root() { return root_; }
  bool too_deep() const { return too_deep_; }
  const std::string& error() const { return error_; }

 private:
  struct Frame {
    J* value;
    std::unique_ptr<std::unordered_map<std::string, std::size_t>> index;  // large objects only
  };

  // Places a value where the parser is: the root, the end of the open array, or the member
  // whose key was just read. Returns it.
  J* put(J v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    J& top = *stack_.back().value;
    if (top.is_array()) {
      auto& a = *top.get_ptr<J::array_t*>();
      a.push_back(std::move(v));
      return &a.back();
    }
    *pending_ = std::move(v);
    return pending_;
  }

  bool open(J v) {
    if (static_cast<int>(stack_.size()) >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    stack_.push_back({put(std::move(v)), nullptr});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  const int max_depth_;
  J root_;
  std::vector<Frame> stack_;
  J* pending_ = nullptr;
  bool too_deep_ = false;
  std::string error_;
};

}  // namespace

nlohmann::ordered_json parse_json(std::string_view text, const JsonParseLimits& limits) {
  DomBuilder b(limits.max_depth);
  const bool ok = J::sax_parse(text.begin(), text.end(), &b, J::input_format_t::json, /*strict=*/true);
  if (b.too_deep()) fail_limit("JSON nests deeper than ", limits.max_depth, " levels");
  if (!ok) fail(b.error().empty() ? std::string("invalid JSON") : b.error());
  return std::move(b.root());
}

}  // namespace ringlm
