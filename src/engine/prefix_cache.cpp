#include "engine/prefix_cache.h"

#include <algorithm>

#include "util/error.h"

namespace ringlm::engine {

namespace {

constexpr std::uint64_t kSeed = 0x6a09e667f3bcc908ull;

// FNV-1a over the block's tokens, chained from the parent's key, then a final mix.
std::uint64_t chain_key(std::uint64_t parent, std::span<const std::int32_t> tokens) {
  std::uint64_t h = parent ^ 0xcbf29ce484222325ull;
  for (const std::int32_t t : tokens) {
    h ^= static_cast<std::uint32_t>(t);
    h *= 0x100000001b3ull;
  }
  h ^= h >> 31;
  h *= 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

}  // namespace

PrefixCache::Block* PrefixCache::find(std::uint64_t key, const Block* parent, std::span<const std::int32_t> tokens) const {
  auto [lo, hi] = blocks_.equal_range(key);
  for (auto it = lo; it != hi; ++it) {
    Block* b = it->second.get();
    if (b->parent == parent && std::equal(b->tokens.begin(), b->tokens.end(), tokens.begin(), tokens.end())) return b;
  }
  return nullptr;
}

void PrefixCache::chain(std::span<const std::int32_t> prompt, std::size_t n, std::vector<Block*>& out) {
  out.clear();
  std::uint64_t key = kSeed;
  Block* parent = nullptr;
  for (std::size_t at = 0; at + kBlockTokens <= n; at += kBlockTokens) {
    const auto tokens = prompt.subspan(at, kBlockTokens);
    key = chain_key(key, tokens);
    Block* b = find(key, parent, tokens);
    if (!b) break;
    out.push_back(b);
    parent = b;
  }
}

std::size_t PrefixCache::lookup(std::span<const std::int32_t> prompt, std::size_t limit) {
  if (blocks_.empty()) return 0;
  chain(prompt, std::min(limit, prompt.size()), scratch_);
  return scratch_.size() * kBlockTokens;
}

void PrefixCache::record(std::size_t supplied) {
  if (supplied > 0) {
    ++stats_.hits;
    stats_.hit_tokens += supplied;
  } else {
    ++stats_.misses;
  }
}

void PrefixCache::restore(std::span<const std::int32_t> prompt, std::size_t n, model::Session& session) {
  const std::size_t from = static_cast<std::size_t>(session.next_position());
  chain(prompt, n, scratch_);
  if (scratch_.size() * kBlockTokens < n) fail("internal error: prefix cache restore of ", n, " tokens it does not hold");
  const std::size_t row = session.kv_position_bytes();
  for (std::size_t k = 0; k < scratch_.size(); ++k) {
    Block& b = *scratch_[k];
    touch(b);
    const std::size_t begin = k * kBlockTokens, end = begin + kBlockTokens;
    if (end <= from) continue;  // the session holds this block already
    const std::size_t start = std::max(begin, from);
    if (b.kv.size() != kBlockTokens * row) fail("internal error: prefix cache block of another geometry");
    session.import_kv(static_cast<std::int64_t>(start), static_cast<std::int64_t>(end - start),
                      b.kv.data() + (start - begin) * row);
  }
}

void PrefixCache::insert(std::span<const std::int32_t> prompt, std::size_t n, const model::Session& session) {
  if (stats_.max_bytes == 0) return;
  const std::size_t end = std::min({n, prompt.size(), static_cast<std::size_t>(session.next_position())});
  const std::size_t bytes = kBlockTokens * session.kv_position_bytes();
  std::uint64_t key = kSeed;
  Block* parent = nullptr;
  for (std::size_t at = 0; at + kBlockTokens <= end; at += kBlockTokens) {
    const auto tokens = prompt.subspan(at, kBlockTokens);
    key = chain_key(key, tokens);
    if (Block* b = find(key, parent, tokens)) {
      touch(*b);
      parent = b;
      continue;
    }
    if (!make_room(bytes, parent)) return;
    auto block = std::make_unique<Block>();
    block->kv.resize(bytes);
    try {
      session.export_kv(static_cast<std::int64_t>(at), kBlockTokens, block->kv.data());
    } catch (const Error&) {
      return;  // a sliding ring no longer holds these positions: the rest cannot be stored
    }
    block->key = key;
    block->parent = parent;
    block->tokens.assign(tokens.begin(), tokens.end());
    touch(*block);
    Block* raw = block.get();
    if (parent) parent->children.push_back(raw);
    blocks_.emplace(key, std::move(block));
    stats_.bytes += bytes;
    ++stats_.blocks;
    ++stats_.inserted_blocks;
    parent = raw;
  }
}

bool PrefixCache::make_room(std::size_t bytes, const Block* keep) {
  if (bytes > stats_.max_bytes) return false;
  while (stats_.bytes + bytes > stats_.max_bytes) {
    Block* victim = nullptr;
    for (const auto& [key, b] : blocks_)
      if (!victim || b->last_used < victim->last_used) victim = b.get();
    if (!victim) return false;
    for (const Block* a = keep; a; a = a->parent)
      if (a == victim) return false;
    evict(victim);
  }
  return true;
}

void PrefixCache::evict(Block* b) {
  while (!b->children.empty()) evict(b->children.back());  // each removes itself from b->children
  if (b->parent) {
    auto& siblings = b->parent->children;
    siblings.erase(std::find(siblings.begin(), siblings.end(), b));
  }
  stats_.bytes -= b->kv.size();
  --stats_.blocks;
  ++stats_.evicted_blocks;
  auto [lo, hi] = blocks_.equal_range(b->key);
  for (auto it = lo; it != hi; ++it) {
    if (it->second.get() == b) {
      blocks_.erase(it);
      return;
    }
  }
}

}  // namespace ringlm::engine
