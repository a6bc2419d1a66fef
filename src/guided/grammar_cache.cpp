#include "guided/grammar_cache.h"

#include <algorithm>

namespace ringlm::guided {

namespace {
// What one entry keeps besides its index: the key twice (list entry and map key; a schema
// can be megabytes of text, e.g. a 60,000-value enum) and the list/map nodes.
size_t entry_bytes(const std::string& key, const GrammarIndex& index) {
  return 2 * key.size() + 160 + index.memory_bytes();
}
}  // namespace

std::shared_ptr<GrammarIndex> GrammarCache::get(const std::string& key, const Build& build) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) {
      ++hits_;
      lru_.splice(lru_.begin(), lru_, it->second);
      auto index = it->second->index;
      evict_locked();  // the entries' masks grow between calls
      return index;
    }
    ++misses_;
  }
  std::shared_ptr<GrammarIndex> built = build();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(key);
  if (it != by_key_.end()) {  // another thread built it meanwhile: share that one
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->index;
  }
  lru_.push_front(Entry{key, built});
  by_key_.emplace(key, lru_.begin());
  evict_locked();
  return built;
}

void GrammarCache::evict_locked() {
  auto total = [&] {
    size_t bytes = 0;
    for (const auto& e : lru_) bytes += entry_bytes(e.key, *e.index);
    return bytes;
  };
  size_t bytes = total();
  while (!lru_.empty() && (lru_.size() > options_.max_entries || bytes > options_.max_bytes)) {
    const Entry& victim = lru_.back();
    bytes -= std::min(bytes, entry_bytes(victim.key, *victim.index));
    by_key_.erase(victim.key);
    lru_.pop_back();
    ++evictions_;
  }
}

GrammarCacheStats GrammarCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  GrammarCacheStats st;
  st.entries = lru_.size();
  st.max_bytes = options_.max_bytes;
  for (const auto& e : lru_) st.bytes += entry_bytes(e.key, *e.index);
  st.hits = hits_;
  st.misses = misses_;
  st.evictions = evictions_;
  return st;
}

}  // namespace ringlm::guided
