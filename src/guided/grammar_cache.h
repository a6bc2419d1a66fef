// A bounded cache of compiled grammars (GrammarIndex) keyed by schema text, for a long-running
// server that sees many distinct schemas. Least recently used entries are dropped when the cache
// holds more than `max_entries` grammars or their memory (GrammarIndex::memory_bytes(), which
// grows as masks and transitions are discovered) exceeds `max_bytes`. Dropping only forgets the
// entry: requests already holding the index keep using it, and the next request for that schema
// compiles it again (the same grammar, so the same masks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "guided/matcher.h"

namespace ringlm::guided {

struct GrammarCacheOptions {
  size_t max_entries = 256;
  size_t max_bytes = size_t(512) << 20;  // summed GrammarIndex::memory_bytes() of the entries
};

struct GrammarCacheStats {
  size_t entries = 0, bytes = 0, max_bytes = 0;
  uint64_t hits = 0, misses = 0, evictions = 0;
};

class GrammarCache {
 public:
  using Build = std::function<std::shared_ptr<GrammarIndex>()>;

  explicit GrammarCache(const GrammarCacheOptions& options = {}) : options_(options) {}

  // The cached index for `key`, or build() (called without the lock held, so one slow compile
  // does not stall other schemas; two threads may build the same key, the first insert wins).
  // build() errors propagate and nothing is cached. Thread-safe.
  std::shared_ptr<GrammarIndex> get(const std::string& key, const Build& build);

  GrammarCacheStats stats() const;
  const GrammarCacheOptions& options() const { return options_; }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<GrammarIndex> index;
  };
  // Drops least recently used entries until the bounds hold. The most recent entry is dropped
  // too if it alone is over max_bytes (its caller still holds it).
  void evict_locked();

  GrammarCacheOptions options_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // front = most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> by_key_;
  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

}  // namespace ringlm::guided
