#include "chat/stop_rules.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.h"

namespace ringlm::chat {

namespace {

void add_ids(const nlohmann::json& value, const std::string& where, StopIds& out) {
  auto add_one = [&](const nlohmann::json& v) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 ||
        v.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
      fail(where, ": eos_token_id must be a non-negative integer or a list of them, got ", v.dump());
    out.add(static_cast<std::int32_t>(v.get<std::int64_t>()));
  };
  if (value.is_null()) return;
  if (value.is_array()) {
    for (const auto& v : value) add_one(v);
  } else {
    add_one(value);
  }
}

void read_config(const std::filesystem::path& path, bool nested_text_config, StopIds& out) {
  if (!std::filesystem::exists(path)) return;
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read ", path.string());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(path.string(), ": invalid JSON: ", e.what());
  }
  if (!j.is_object()) fail(path.string(), ": expected a JSON object");
  if (j.contains("eos_token_id")) add_ids(j["eos_token_id"], path.string() + ": eos_token_id", out);
  if (nested_text_config && j.contains("text_config") && j["text_config"].is_object() &&
      j["text_config"].contains("eos_token_id"))
    add_ids(j["text_config"]["eos_token_id"], path.string() + ": text_config.eos_token_id", out);
}

}  // namespace

StopIds StopIds::load(const std::filesystem::path& dir) {
  StopIds out;
  read_config(dir / "generation_config.json", false, out);
  read_config(dir / "config.json", true, out);
  return out;
}

bool StopIds::contains(std::int32_t id) const { return std::binary_search(ids.begin(), ids.end(), id); }

void StopIds::add(std::int32_t id) {
  auto it = std::lower_bound(ids.begin(), ids.end(), id);
  if (it == ids.end() || *it != id) ids.insert(it, id);
}

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop_strings) {
  for (auto& s : stop_strings)
    if (!s.empty()) stops_.push_back(std::move(s));
  std::size_t longest = 0;
  for (const auto& s : stops_) longest = std::max(longest, s.size());
  pending_.reserve(longest * 2 + 64);
}

const std::string& StopStringMatcher::matched() const {
  static const std::string none;
  return matched_ >= 0 ? stops_[static_cast<std::size_t>(matched_)] : none;
}

void StopStringMatcher::push(std::string_view piece, std::string& out) {
  if (stopped()) return;
  if (stops_.empty()) {
    out.append(piece);
    return;
  }
  pending_.append(piece);
  // The earliest complete occurrence of any stop string ends the text there.
  std::size_t best = std::string::npos;
  int best_index = -1;
  for (std::size_t i = 0; i < stops_.size(); ++i) {
    std::size_t hit = pending_.find(stops_[i]);
    if (hit < best) {
      best = hit;
      best_index = static_cast<int>(i);
    }
  }
  if (best_index >= 0) {
    out.append(pending_, 0, best);
    pending_.clear();
    matched_ = best_index;
    return;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  std::size_t hold = 0;
  for (const auto& s : stops_) {
    std::size_t max_len = std::min(s.size() - 1, pending_.size());
    for (std::size_t len = max_len; len > hold; --len) {
      if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  out.append(pending_, 0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
}

void StopStringMatcher::flush(std::string& out) {
  if (!stopped()) out.append(pending_);
  pending_.clear();
}

}  // namespace ringlm::chat
