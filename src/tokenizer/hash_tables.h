// Open-addressing hash tables for the tokenizer's hot lookups: piece -> id over one byte
// arena (no per-key allocation) and (left id, right id) -> merge. Both are built once and
// then only read, so they are safe to share between threads.
#pragma once

#include <cstdint>
#include <algorithm>
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

// Maps byte strings to non-negative int32 ids. Inserting an existing key replaces its value. Each slot
// holds the key's arena offset, length and value, so a lookup touches the slot and the key
// bytes only.
class StringIdMap {
 public:
  void reserve(size_t n, size_t total_key_bytes) {
    rehash(table_capacity_for(n));
    arena_.reserve(total_key_bytes);
  }

  void insert(std::string_view key, int32_t value) { insert_hashed(key, value, hash_bytes(key)); }

  // insert() for many (key, value) pairs, prefetching each batch's slots first.
  template <typename Pair>
  void insert_many(const Pair* items, size_t n) {
    if ((count_ + n) * 2 > slots_.size()) rehash(table_capacity_for(count_ + n));
    constexpr size_t kBatch = 64;
    uint64_t hashes[kBatch];
    for (size_t base = 0; base < n; base += kBatch) {
      const size_t m = std::min(kBatch, n - base);
      for (size_t k = 0; k < m; ++k) {
        hashes[k] = hash_bytes(items[base + k].first);
        __builtin_prefetch(&slots_[hashes[k] & mask_]);
      }
      for (size_t k = 0; k < m; ++k) insert_hashed(items[base + k].first, items[base + k].second, hashes[k]);
    }
  }

  void insert_hashed(std::string_view key, int32_t value, uint64_t h) {
    if ((count_ + 1) * 2 > slots_.size()) {
      rehash(table_capacity_for(count_ + 1));
    }
    size_t i = h & mask_;
    for (;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value < 0) break;
      if (s.tag == static_cast<uint32_t>(h) && key_of(s) == key) {
        s.value = value;
        return;
      }
    }
    const auto offset = static_cast<uint32_t>(arena_.size());
    arena_.append(key);
    slots_[i] = Slot{static_cast<uint32_t>(h), value, offset, static_cast<uint32_t>(key.size())};
    ++count_;
  }

  // The id for `key`, or -1.
  int32_t find(std::string_view key) const {
    if (slots_.empty()) return -1;
    return find_hashed(key, hash_bytes(key));
  }

  int32_t find_hashed(std::string_view key, uint64_t h) const {
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value < 0) return -1;
      if (s.tag == static_cast<uint32_t>(h) && s.length == key.size() &&
          std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0) {
        return s.value;
      }
    }
  }

  // find() for many keys at once: the slots, then the key bytes, are prefetched for the
  // whole batch before any comparison, so the cache misses overlap (used while loading,
  // where half a million merges each need three lookups).
  void find_many(const std::string_view* keys, int32_t* out, size_t n) const {
    constexpr size_t kBatch = 64;
    uint64_t hashes[kBatch];
    for (size_t base = 0; base < n; base += kBatch) {
      const size_t m = std::min(kBatch, n - base);
      for (size_t k = 0; k < m; ++k) {
        hashes[k] = hash_bytes(keys[base + k]);
        if (!slots_.empty()) __builtin_prefetch(&slots_[hashes[k] & mask_]);
      }
      if (slots_.empty()) {
        for (size_t k = 0; k < m; ++k) out[base + k] = -1;
        continue;
      }
      for (size_t k = 0; k < m; ++k) {
        const Slot& s = slots_[hashes[k] & mask_];
        if (s.value >= 0) __builtin_prefetch(arena_.data() + s.offset);
      }
      for (size_t k = 0; k < m; ++k) out[base + k] = find_hashed(keys[base + k], hashes[k]);
    }
  }

  size_t size() const { return count_; }
  size_t key_bytes() const { return arena_.size(); }

  template <typename F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.value >= 0) f(key_of(s), s.value);
  }

  void clear() {
    slots_.assign(slots_.size(), Slot{});
    count_ = 0;
    arena_.clear();
  }

 private:
  struct Slot {
    uint32_t tag = 0;
    int32_t value = -1;  // -1: empty (stored values are non-negative ids)
    uint32_t offset = 0;
    uint32_t length = 0;
  };
  std::string_view key_of(const Slot& s) const { return std::string_view(arena_.data() + s.offset, s.length); }
  void rehash(size_t cap) {
    if (cap <= slots_.size()) return;
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    for (const Slot& s : old) {
      if (s.value < 0) continue;
      size_t i = hash_bytes(key_of(s)) & mask_;
      while (slots_[i].value >= 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
  std::string arena_;
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

  void prefetch(int32_t left, int32_t right) const {
    if (!keys_.empty()) __builtin_prefetch(&keys_[mix(pack(left, right)) & mask_]);
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
