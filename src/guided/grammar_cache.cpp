#include "guided/grammar_cache.h"

#include <algorithm>

namespace ringlm::guided {

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
    for (const auto& e : lru_) bytes += e.index->memory_bytes();
    return bytes;
  };
  size_t bytes = total();
  while (!lru_.empty() && (lru_.size() > options_.max_entries || bytes > options_.max_bytes)) {
    const Entry& victim = lru_.back();
    bytes -= std::min(bytes, victim.index->memory_bytes());
    by_key_.erase(victim.key);
    lru_.pop_back();
    ++evictions_;
  }
}

GrammarCacheStats GrammarCache::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  GrammarCacheStats st;
  st.entries = lru_.size();
  for (const auto& e : lru_) st.bytes += e.index->memory_bytes();
  st.hits = hits_;
  st.misses = misses_;
  st.evictions = evictions_;
  return st;
}

}  // namespace ringlm::guided
