// Open-addressing hash tables for the tokenizer's hot lookups: piece -> id over one byte
// arena (no per-key allocation) and (left id, right id) -> merge. Both are built once and
// then only read, so they are safe to share between threads.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ringlm::tok {

inline uint64_t hash_bytes(std::string_view s) {
  // Word-at-a-time multiply-xorshift; keys are short token pieces.
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xFF51AFD7ED558CCDull);
  const char* p = s.data();
  size_t n = s.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0x94D049BB133111EBull;
  }
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return h;
}

inline size_t table_capacity_for(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  return cap;
}

// Maps byte strings to int32 ids. Inserting an existing key replaces its value.
class StringIdMap {
 public:
  void reserve(size_t n, size_t total_key_bytes) {
    rehash(table_capacity_for(n));
    arena_.reserve(total_key_bytes);
    offsets_.reserve(n + 1);
    values_.reserve(n);
  }

  void insert(std::string_view key, int32_t value) {
    if ((values_.size() + 1) * 2 > slots_.size()) rehash(table_capacity_for(values_.size() + 1));
    const uint64_t h = hash_bytes(key);
    size_t i = h & mask_;
    for (;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.entry < 0) break;
      if (s.tag == static_cast<uint32_t>(h) && key_of(s.entry) == key) {
        values_[s.entry] = value;
        return;
      }
    }
    if (offsets_.empty()) offsets_.push_back(0);
    arena_.append(key);
    offsets_.push_back(static_cast<uint32_t>(arena_.size()));
    values_.push_back(value);
    slots_[i] = Slot{static_cast<uint32_t>(h), static_cast<int32_t>(values_.size() - 1)};
  }

  // The id for `key`, or -1.
  int32_t find(std::string_view key) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash_bytes(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.entry < 0) return -1;
      if (s.tag == static_cast<uint32_t>(h) && key_of(s.entry) == key) return values_[s.entry];
    }
  }

  size_t size() const { return values_.size(); }

 private:
  struct Slot {
    uint32_t tag = 0;
    int32_t entry = -1;
  };
  std::string_view key_of(int32_t e) const {
    return std::string_view(arena_.data() + offsets_[e], offsets_[e + 1] - offsets_[e]);
  }
  void rehash(size_t cap) {
    if (cap <= slots_.size()) return;
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    for (const Slot& s : old) {
      if (s.entry < 0) continue;
      size_t i = hash_bytes(key_of(s.entry)) & mask_;
      while (slots_[i].entry >= 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  std::string arena_;
  std::vector<uint32_t> offsets_;
  std::vector<int32_t> values_;
};

// A BPE merge rule found by the ids of the two pieces it joins.
struct MergeRule {
  int32_t rank = -1;    // lower merges first; -1: no rule
  int32_t result = -1;  // id of the joined piece
};

// (left id, right id) -> MergeRule. Inserting an existing pair replaces it (the later rule
// wins, as in Hugging Face's loader).
class PairMergeMap {
 public:
  void reserve(size_t n) { rehash(table_capacity_for(n)); }

  void insert(int32_t left, int32_t right, MergeRule rule) {
    if ((count_ + 1) * 2 > keys_.size()) rehash(table_capacity_for(count_ + 1));
    const uint64_t key = pack(left, right);
    size_t i = mix(key) & mask_;
    while (keys_[i] != kEmpty && keys_[i] != key) i = (i + 1) & mask_;
    if (keys_[i] == kEmpty) ++count_;
    keys_[i] = key;
    rules_[i] = rule;
  }

  MergeRule find(int32_t left, int32_t right) const {
    if (keys_.empty()) return {};
    const uint64_t key = pack(left, right);
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == key) return rules_[i];
      if (keys_[i] == kEmpty) return {};
    }
  }

  size_t size() const { return count_; }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    return x;
  }
  void rehash(size_t cap) {
    if (cap <= keys_.size()) return;
    std::vector<uint64_t> old_keys;
    std::vector<MergeRule> old_rules;
    old_keys.swap(keys_);
    old_rules.swap(rules_);
    keys_.assign(cap, kEmpty);
    rules_.assign(cap, MergeRule{});
    mask_ = cap - 1;
    for (size_t j = 0; j < old_keys.size(); ++j) {
      if (old_keys[j] == kEmpty) continue;
      size_t i = mix(old_keys[j]) & mask_;
      while (keys_[i] != kEmpty) i = (i + 1) & mask_;
      keys_[i] = old_keys[j];
      rules_[i] = old_rules[j];
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<MergeRule> rules_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace ringlm::tok
