// Prompt-prefix KV shared across requests (serve: the same system prompt, tools or schema
// in front of every request), bounded in bytes, least recently used dropped.
//
// Prompts are cut into blocks of kBlockTokens tokens. A block is keyed by every token from
// the start of the prompt to its end (a hash chained from its parent block, with the tokens
// themselves compared on lookup, so a hash collision can never hand out wrong KV) and holds
// those tokens' K/V rows for every KV-owning layer, exported from the session that computed
// them. KV at a position depends only on the tokens up to it, so a block is valid for any
// prompt that starts with its key. Lookup walks the chain from the first block; a request
// reuses the longest run of cached blocks and computes the rest. Blocks after a prompt's
// first soft token (image, audio) are never stored or used: placeholder ids do not say which
// image they stand for.
//
// Eviction drops the least recently used block together with its descendants (they are
// unreachable without it). A chain is touched root first, so descendants are always more
// recent than their ancestors and the oldest block is a leaf or an orphan-free subtree.
//
// Not thread-safe: BatchScheduler calls it from its one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "model/model.h"

namespace ringlm::engine {

struct PrefixCacheStats {
  std::uint64_t hits = 0;          // lookups that supplied at least one block
  std::uint64_t misses = 0;        // lookups (with a whole block to look for) that supplied none
  std::uint64_t hit_tokens = 0;    // prompt tokens supplied, over all hits
  std::uint64_t inserted_blocks = 0;
  std::uint64_t evicted_blocks = 0;
  std::size_t bytes = 0;           // KV bytes held now
  std::size_t blocks = 0;          // blocks held now
  std::size_t max_bytes = 0;
};

class PrefixCache {
 public:
  static constexpr int kBlockTokens = 16;

  // max_bytes: the bound on the KV bytes held (0: the cache holds nothing).
  explicit PrefixCache(std::size_t max_bytes) { stats_.max_bytes = max_bytes; }
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // How many leading tokens of `prompt` (at most `limit`, a whole number of blocks) the
  // cache holds. Touches nothing: the caller may prefer another source (its own slot's KV).
  std::size_t lookup(std::span<const std::int32_t> prompt, std::size_t limit);
  // Counts one request: `supplied` tokens came from the cache (0: a miss).
  void record(std::size_t supplied);
  // Appends the cached KV of prompt positions [session.next_position(), n) to `session`, whose
  // cache must hold exactly prompt[0, next_position()); n from lookup() (next_position() <= n).
  // Touches the blocks used.
  void restore(std::span<const std::int32_t> prompt, std::size_t n, model::Session& session);
  // Stores the whole blocks of prompt[0, min(n, session.next_position())) that are not held
  // yet, exported from `session` (which holds those positions). Stops when a block does not
  // fit even after evicting everything older.
  void insert(std::span<const std::int32_t> prompt, std::size_t n, const model::Session& session);

  const PrefixCacheStats& stats() const { return stats_; }
  std::size_t max_bytes() const { return stats_.max_bytes; }

 private:
  struct Block {
    std::uint64_t key = 0;
    Block* parent = nullptr;
    std::vector<std::int32_t> tokens;  // this block's kBlockTokens tokens
    std::vector<std::uint8_t> kv;      // their rows (model::Session::export_kv layout)
    std::vector<Block*> children;
    std::uint64_t last_used = 0;
  };
  // The chain of cached blocks covering prompt[0, n) (n a multiple of kBlockTokens).
  void chain(std::span<const std::int32_t> prompt, std::size_t n, std::vector<Block*>& out);
  Block* find(std::uint64_t key, const Block* parent, std::span<const std::int32_t> tokens) const;
  void touch(Block& b) { b.last_used = ++clock_; }
  void evict(Block* b);
  // Evicts least recently used blocks until `bytes` more fit; false (nothing more evicted)
  // when that would evict `keep` or one of its ancestors.
  bool make_room(std::size_t bytes, const Block* keep);

  std::unordered_multimap<std::uint64_t, std::unique_ptr<Block>> blocks_;
  std::uint64_t clock_ = 0;
  PrefixCacheStats stats_;
  std::vector<Block*> scratch_;
};

}  // namespace ringlm::engine
