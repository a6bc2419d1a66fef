#include "guided/key_tracker.h"

#include <algorithm>

namespace ringlm::guided {
namespace {

bool contains(const std::vector<std::string>& keys, std::string_view k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

// true / false / null items of a unique array are kept with the keys, marked by a leading 0x01
// (a raw control byte never occurs in a canonical string, so no string item equals one).
bool literal_byte(uint8_t c) { return c >= 'a' && c <= 'z'; }
std::string literal_key(std::string_view word) { return "\x01" + std::string(word); }
bool complete_literal(std::string_view w) { return w == "true" || w == "false" || w == "null"; }
// The literal a prefix must become ("" if none).
std::string_view literal_of(std::string_view prefix) {
  if (prefix.empty()) return {};
  return prefix[0] == 't' ? "true" : prefix[0] == 'f' ? "false" : prefix[0] == 'n' ? "null" : "";
}

// One byte of string content: returns true when it is the closing quote. `esc` as in KeyTracker.
bool string_byte(int& esc, uint8_t c) {
  if (esc == -1) {
    esc = c == 'u' ? 4 : 0;
  } else if (esc > 0) {
    --esc;
  } else if (c == '\\') {
    esc = -1;
  } else if (c == '"') {
    return true;
  }
  return false;
}

}  // namespace

void KeyTracker::reset() {
  ++state_version_;
  ++keys_version_;
  frames_.clear();
  in_string_ = is_key_ = in_thought_ = false;
  esc_ = 0;
  key_.clear();
  lit_.clear();
}

const std::vector<std::string>* KeyTracker::current_keys() const {
  return frames_.empty() || !(frames_.back().object || frames_.back().unique) ? nullptr : &frames_.back().keys;
}

bool KeyTracker::any_keys() const {
  for (auto& f : frames_)
    if (!f.keys.empty()) return true;
  return false;
}

void KeyTracker::feed(std::string_view bytes, const UniqueFn& unique) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    char ch = bytes[i];
    auto c = static_cast<uint8_t>(ch);
    // A thought channel (reply_grammar.h markers) is free text before the answer: skipped.
    if (c >= 0xF8 || in_thought_) {
      if (c == 0xFB) in_thought_ = true;
      if (c == 0xFC) in_thought_ = false;
      ++state_version_;
      continue;
    }
    if (in_string_) {
      // Plain bytes of a value string change nothing a probe sees; everything else does.
      if (is_key_ || esc_ != 0 || c == '"' || c == '\\') ++state_version_;
      if (string_byte(esc_, c)) {
        in_string_ = false;
        if (is_key_) {
          frames_.back().keys.push_back(key_);
          ++keys_version_;
        }
        key_.clear();
      } else if (is_key_) {
        key_.push_back(ch);
      }
      continue;
    }
    ++state_version_;
    if (c == '{' || c == '[' || c == '}' || c == ']') ++keys_version_;
    if (!frames_.empty() && frames_.back().unique && literal_byte(c)) {
      lit_.push_back(ch);
      if (complete_literal(lit_)) {
        frames_.back().keys.push_back(literal_key(lit_));
        ++keys_version_;
        lit_.clear();
      }
      continue;
    }
    lit_.clear();
    switch (c) {
      case '{': frames_.push_back({true, true, false, {}}); break;
      case '[': frames_.push_back({false, false, unique && unique(i), {}}); break;
      case '}':
      case ']':
        if (!frames_.empty()) frames_.pop_back();
        break;
      case ',':
        if (!frames_.empty() && frames_.back().object) frames_.back().expect_key = true;
        break;
      case ':':
        if (!frames_.empty()) frames_.back().expect_key = false;
        break;
      case '"':
        in_string_ = true;
        is_key_ = !frames_.empty() && ((frames_.back().object && frames_.back().expect_key) || frames_.back().unique);
        esc_ = 0;
        key_.clear();
        break;
      default: break;  // scalars and whitespace
    }
  }
}

KeyTracker::Probe KeyTracker::probe(std::string_view bytes, const UniqueFn& unique) const {
  // The open frames are frames_[0, base) then the frames this probe opened (local). Only the
  // innermost frame's expect_key changes, so a base frame's flag is overridden while on top.
  struct Local {
    bool object, expect_key, unique;
    size_t first_key;
  };
  thread_local std::vector<Local> local;
  thread_local std::vector<std::string> local_keys;
  local.clear();
  local_keys.clear();
  size_t base = frames_.size();
  bool base_expect = base ? frames_[base - 1].expect_key : false;
  bool in_string = in_string_, is_key = is_key_;
  int esc = esc_;
  std::string lit = lit_;
  scratch_key_ = key_;
  Probe out;
  auto top_object = [&] { return local.empty() ? base > 0 && frames_[base - 1].object : local.back().object; };
  auto top_unique = [&] { return local.empty() ? base > 0 && frames_[base - 1].unique : local.back().unique; };
  // A key (or unique item) closing in the innermost frame equals one before it in that frame:
  // one fed before (a base frame) or one this probe closed (local_keys, from the frame's first).
  auto repeated = [&](const std::string& k) {
    if (local.empty()) return (base > 0 && contains(frames_[base - 1].keys, k)) || contains(local_keys, k);
    auto first = local_keys.begin() + std::ptrdiff_t(local.back().first_key);
    return std::find(first, local_keys.end(), k) != local_keys.end();
  };
  for (size_t i = 0; i < bytes.size(); ++i) {
    char ch = bytes[i];
    auto c = static_cast<uint8_t>(ch);
    if (c >= 0xF8 || in_thought_) return out;  // a marker or thought text: no key involved
    if (in_string) {
      if (!string_byte(esc, c)) {
        if (is_key) scratch_key_.push_back(ch);
        continue;
      }
      in_string = false;
      if (!is_key) continue;
      if (repeated(scratch_key_)) {
        out.repeats = true;
        return out;
      }
      local_keys.push_back(scratch_key_);
      continue;
    }
    if (top_unique() && literal_byte(c)) {
      lit.push_back(ch);
      if (complete_literal(lit)) {
        std::string k = literal_key(lit);
        if (repeated(k)) {
          out.repeats = true;
          return out;
        }
        local_keys.push_back(std::move(k));
        lit.clear();
      }
      continue;
    }
    lit.clear();
    switch (c) {
      case '{': local.push_back({true, true, false, local_keys.size()}); break;
      case '[': local.push_back({false, false, unique && unique(i), local_keys.size()}); break;
      case '}':
      case ']':
        if (!local.empty()) {
          local_keys.resize(local.back().first_key);
          local.pop_back();
        } else if (base > 0) {
          --base;
          local_keys.clear();  // keys closed in the frame just left no longer matter
          base_expect = base ? frames_[base - 1].expect_key : false;
        }
        break;
      case ',':
        if (top_object()) (local.empty() ? base_expect : local.back().expect_key) = true;
        break;
      case ':':
        (local.empty() ? base_expect : local.back().expect_key) = false;
        break;
      case '"':
        in_string = true;
        is_key = (top_object() && (local.empty() ? base_expect : local.back().expect_key)) || top_unique();
        esc = 0;
        scratch_key_.clear();
        break;
      default: break;
    }
  }
  // Inside true / false / null: its one completion must be new.
  if (!in_string && !lit.empty() && !literal_of(lit).empty() && repeated(literal_key(literal_of(lit)))) {
    out.repeats = true;
    return out;
  }
  if (in_string && is_key) {
    out.in_key = true;
    out.escape = esc;
    if (local.empty() && base > 0) out.used = &frames_[base - 1].keys;
  }
  return out;
}

}  // namespace ringlm::guided
