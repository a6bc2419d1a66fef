// Object keys seen so far in a generated JSON text, so that a key cannot repeat inside one
// object. A grammar keeps declared keys distinct by their fixed order, but keys drawn from an
// infinite language (additionalProperties, patternProperties) are a loop that only counts them;
// `{"x":1,"x":2}` would pass the grammar and then fail minProperties (the parsed object keeps
// one "x"). The Matcher feeds accepted bytes here and asks, for a candidate token, whether it
// would close a key equal to an earlier one of the same object.
//
// Keys are compared as written (raw bytes between the quotes): the grammar emits one canonical
// escape per code point, so equal texts are equal keys.
//
// The same holds for the string items of an array that must have distinct items (uniqueItems
// over strings, Grammar::distinct_items): such an array is a frame whose "keys" are its items,
// and everything below (probe, key(), current_keys(), the versions) covers them too. Whether a
// '[' opens such an array is the grammar's to say: feed and probe ask `unique(i)` for each '['
// outside a string (i = its index in the bytes given). Items true / false / null of such an array
// are tracked too (one spelling each); a probe that closes a used one, or ends inside one whose
// word is used, repeats.
#include <functional>
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringlm::guided {

class KeyTracker {
 public:
  // What feeding some bytes after the current text would do.
  struct Probe {
    bool repeats = false;  // closes a key equal to an earlier key of its object
    bool in_key = false;   // ends inside a key (its bytes so far: key(), escape state: escape)
    int escape = 0;
    // The earlier keys of the object that key belongs to (null: an object opened by the probe).
    const std::vector<std::string>* used = nullptr;
  };

  using UniqueFn = std::function<bool(size_t)>;

  void reset();
  void feed(std::string_view bytes, const UniqueFn& unique = {});
  Probe probe(std::string_view bytes, const UniqueFn& unique = {}) const;
  // The key bytes of the last probe that ended inside a key.
  const std::string& probe_key() const { return scratch_key_; }
  // Current position (after feed): inside a key, its bytes so far and its object's keys.
  bool in_key() const { return in_string_ && is_key_; }
  bool in_string() const { return in_string_; }
  const std::string& key() const { return key_; }
  const std::vector<std::string>* current_keys() const;
  // True when some open object already has a key (otherwise nothing can repeat).
  bool any_keys() const;
  // Counters for caches over the tracker's state. state_version() changes whenever a fed byte
  // changes anything a probe depends on (everything but plain bytes inside a value string);
  // keys_version() whenever the set of open objects or their keys changes. Both only grow
  // (also across reset), so a cached (version, ...) entry is never mistaken for a later state.
  uint64_t state_version() const { return state_version_; }
  uint64_t keys_version() const { return keys_version_; }

 private:
  struct Frame {
    bool object = false;
    bool expect_key = false;
    bool unique = false;  // an array whose string items are tracked (in `keys`)
    std::vector<std::string> keys;
  };
  std::vector<Frame> frames_;
  bool in_string_ = false, is_key_ = false;
  bool in_thought_ = false;  // between the thought-channel markers (reply_grammar.h)
  int esc_ = 0;  // -1: after '\', > 0: hex digits of \uXXXX still to come
  std::string key_;
  std::string lit_;  // a true / false / null item of a unique array so far
  mutable std::string scratch_key_;
  uint64_t state_version_ = 0, keys_version_ = 0;
};

}  // namespace ringlm::guided
