#include "guided/matcher.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_map>

#include "guided/reply_grammar.h"
#include "guided/work_budget.h"
#include "util/error.h"

namespace ringlm::guided {
namespace {

constexpr int32_t kUnknown = -2;
constexpr uint32_t kBottom = UINT32_MAX;  // parent of the root frame
constexpr uint32_t kMaxStackDepth = 1000;

struct PairHash {
  size_t operator()(const std::pair<uint32_t, uint32_t>& p) const {
    return std::hash<uint64_t>()((uint64_t(p.first) << 32) | p.second);
  }
};

struct VecHash {
  size_t operator()(const std::vector<uint32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
    return size_t(h);
  }
};

// A configuration's cached token mask. Most configurations outside string bodies (keys,
// numbers, punctuation) allow a few hundred of the 262,144 tokens, so a mask whose allowed ids
// fit in an eighth of the dense words is kept as its sorted id list: 32 KiB becomes ~1 KiB, the
// cache holds many more masks within its byte budget, and a union over masks walks ids.
struct CachedMask {
  std::vector<uint32_t> data;  // dense bit words, or sorted allowed ids when `sparse`
  bool sparse = false;
  bool present = false;  // false: not cached (never computed, or evicted)

  size_t bytes() const { return data.size() * sizeof(uint32_t); }

  // Keeps `dense` (vocabulary-sized bit words) in the smaller of the two forms. The ids are
  // collected with ctz until they pass an eighth of the words (no popcount pass: without
  // -mpopcnt it is a library call per word, which showed in the miss latency).
  void assign(std::vector<uint32_t> dense) {
    const size_t limit = dense.size() / 8;
    std::vector<uint32_t> ids;
    sparse = true;
    for (size_t w = 0; w < dense.size() && sparse; ++w)
      for (uint32_t bits = dense[w]; bits; bits &= bits - 1) {
        if (ids.size() == limit) {
          sparse = false;
          break;
        }
        ids.push_back(uint32_t(w * 32 + __builtin_ctz(bits)));
      }
    data = sparse ? std::move(ids) : std::move(dense);
    data.shrink_to_fit();
    present = true;
  }
  void clear() {
    std::vector<uint32_t>().swap(data);  // release the memory, not just the size
    sparse = present = false;
  }
  // out (words long) = this mask.
  void copy_to(uint32_t* out, size_t words) const {
    if (sparse) {
      std::memset(out, 0, words * sizeof(uint32_t));
      or_into(out, words);
      return;
    }
    std::memcpy(out, data.data(), std::min(data.size(), words) * sizeof(uint32_t));
    if (data.size() < words) std::memset(out + data.size(), 0, (words - data.size()) * sizeof(uint32_t));
  }
  // out (words long) |= this mask.
  void or_into(uint32_t* out, size_t words) const {
    if (sparse) {
      for (uint32_t id : data)
        if ((id >> 5) < words) out[id >> 5] |= 1u << (id & 31);
      return;
    }
    for (size_t w = 0; w < std::min(data.size(), words); ++w) out[w] |= data[w];
  }
};

}  // namespace

struct GrammarIndex::Impl {
  Grammar g;
  const Vocabulary* vocab;
  GrammarIndexOptions options;
  std::mutex mu;

  // Stack nodes: (grammar state, parent node). A parent node's state is the caller's return
  // state, so popping a finished frame yields exactly the parent node.
  std::vector<std::pair<uint32_t, uint32_t>> nodes;
  std::vector<uint32_t> node_depth;
  std::unordered_map<std::pair<uint32_t, uint32_t>, uint32_t, PairHash> node_ids;

  struct Config {
    std::vector<uint32_t> kernel;  // nodes whose state has byte edges, sorted
    bool accept = false;
    std::unique_ptr<std::array<int32_t, 256>> next;
    CachedMask mask;
    // plain_remaining of the single kernel state (string-body fast path), else kNotPlain.
    int32_t plain = Grammar::kNotPlain;
    int8_t unique = -1;  // in_unique_array: -1 not computed yet, else 0 / 1
    // Mask LRU links (configuration ids; -1 = none). Head = most recently used.
    int32_t lru_prev = -1, lru_next = -1;
  };
  std::vector<Config> configs;
  std::unordered_map<std::vector<uint32_t>, int32_t, VecHash> config_ids;  // kernel + accept flag

  // Mask cache: the configurations holding a mask, most recently used first.
  int32_t lru_head = -1, lru_tail = -1;
  size_t masks_cached = 0, mask_bytes = 0, next_tables = 0, kernel_words = 0;
  uint64_t mask_hits = 0, mask_misses = 0, mask_evictions = 0;
  size_t bodies_bytes = 0;  // string-body tables (fixed at construction)

  // Scratch for closure.
  std::vector<uint32_t> work, kernel_scratch;
  std::vector<uint32_t> seen_epoch;
  uint32_t epoch = 0;
  std::vector<int32_t> walk_stack;

  uint32_t node(uint32_t state, uint32_t parent) {
    auto [it, inserted] = node_ids.emplace(std::make_pair(state, parent), uint32_t(nodes.size()));
    if (inserted) {
      nodes.emplace_back(state, parent);
      node_depth.push_back(parent == kBottom ? 1 : node_depth[parent] + 1);
      seen_epoch.push_back(0);
    }
    return it->second;
  }

  // Closes `seeds` under epsilon moves, calls and returns; interns the resulting configuration.
  int32_t close(const std::vector<uint32_t>& seeds) {
    ++epoch;
    work.clear();
    kernel_scratch.clear();
    bool accept = false;
    for (uint32_t n : seeds) {
      if (seen_epoch[n] != epoch) {
        seen_epoch[n] = epoch;
        work.push_back(n);
      }
    }
    auto push = [&](uint32_t n) {
      if (seen_epoch[n] != epoch) {
        seen_epoch[n] = epoch;
        work.push_back(n);
      }
    };
    while (!work.empty()) {
      uint32_t n = work.back();
      work.pop_back();
      auto [q, parent] = nodes[n];
      expand_body_state(g, q);  // may append states: take the reference after it
      const Grammar::State& st = g.states[q];
      if (!st.edges.empty()) kernel_scratch.push_back(n);
      for (uint32_t e : st.eps) push(node(e, parent));
      if (!st.calls.empty() && node_depth[n] < kMaxStackDepth) {
        for (auto& c : st.calls) {
          uint32_t ret = node(c.ret, parent);
          push(node(g.rule_start[c.rule], ret));
        }
      }
      if (st.final) {
        if (parent == kBottom) {
          accept = true;
        } else {
          push(parent);
        }
      }
    }
    if (kernel_scratch.empty() && !accept) return kDead;
    std::sort(kernel_scratch.begin(), kernel_scratch.end());
    std::vector<uint32_t> key = kernel_scratch;
    key.push_back(accept ? 1u : 0u);
    auto [it, inserted] = config_ids.emplace(std::move(key), int32_t(configs.size()));
    if (inserted) {
      Config c;
      c.kernel = kernel_scratch;
      kernel_words += c.kernel.size();
      c.accept = accept;
      if (c.kernel.size() == 1 && !accept) c.plain = g.states[nodes[c.kernel[0]].first].plain_remaining;
      configs.push_back(std::move(c));
    }
    return it->second;
  }

  int32_t step(int32_t c, uint8_t b) {
    Config& cfg = configs[size_t(c)];
    if (!cfg.next) {
      cfg.next = std::make_unique<std::array<int32_t, 256>>();
      cfg.next->fill(kUnknown);
      ++next_tables;
    }
    int32_t cached = (*cfg.next)[b];
    if (cached != kUnknown) return cached;
    std::vector<uint32_t> seeds;
    for (uint32_t n : configs[size_t(c)].kernel) {
      auto [q, parent] = nodes[n];
      for (auto& e : g.states[q].edges) {
        if (b >= e.lo && b <= e.hi) seeds.push_back(node(e.to, parent));
      }
    }
    int32_t result = seeds.empty() ? kDead : close(seeds);
    (*configs[size_t(c)].next)[b] = result;  // configs may have reallocated
    return result;
  }

  int32_t fast_step(int32_t c, uint8_t b) {
    const auto& next = configs[size_t(c)].next;
    if (next) {
      int32_t v = (*next)[b];
      if (v != kUnknown) return v;
    }
    return step(c, b);
  }

  // Sets the bits of every token in `trie` that can be consumed from configuration c. Where the
  // walk enters a string-body configuration (plain fast path), the whole subtree is decided from
  // the tokens' precomputed plain suffixes instead of node by node.
  void walk(const TokenTrie& trie, int32_t c, uint32_t* mask) {
    walk_stack.assign(size_t(trie.max_depth) + 1, kDead);
    walk_stack[0] = c;
    size_t n = trie.size();
    size_t i = 0;
    while (i < n) {
      budget_detail::tick();
      int32_t parent = walk_stack[trie.depth[i] - 1];
      int32_t nc = fast_step(parent, trie.byte[i]);
      if (nc == kDead) {
        i = trie.subtree_end[i];
        continue;
      }
      int32_t plain = configs[size_t(nc)].plain;
      if (plain != Grammar::kNotPlain) {
        subtree_plain(trie, i, nc, plain, mask);
        i = trie.subtree_end[i];
        continue;
      }
      walk_stack[trie.depth[i]] = nc;
      for (uint32_t k = trie.token_begin[i]; k < trie.token_begin[i + 1]; ++k) {
        uint32_t id = trie.tokens[k];
        mask[id >> 5] |= 1u << (id & 31);
      }
      ++i;
    }
  }

  // Tokens of trie node i's subtree, whose first depth[i] bytes led to the string-body
  // configuration x that allows `remaining` more plain code points.
  void subtree_plain(const TokenTrie& trie, size_t i, int32_t x, int32_t remaining, uint32_t* mask) {
    size_t d = trie.depth[i];
    uint32_t end = trie.token_begin[trie.subtree_end[i]];
    for (uint32_t k = trie.token_begin[i]; k < end; ++k) {
      uint32_t id = trie.tokens[k];
      const std::string& w = vocab->bytes(id);
      bool ok;
      if (trie.plain_from[k] <= d) {
        ok = true;
        if (remaining != Grammar::kPlainUnbounded) {
          int64_t cps = 0;
          for (size_t p = d; p < w.size(); ++p) cps += (static_cast<unsigned char>(w[p]) & 0xC0) != 0x80;
          ok = cps <= remaining;
        }
      } else {
        int32_t y = x;
        for (size_t p = d; p < w.size() && y != kDead; ++p) y = fast_step(y, static_cast<uint8_t>(w[p]));
        ok = y != kDead;
      }
      if (ok) mask[id >> 5] |= 1u << (id & 31);
    }
  }

  void lru_unlink(int32_t c) {
    Config& x = configs[size_t(c)];
    (x.lru_prev >= 0 ? configs[size_t(x.lru_prev)].lru_next : lru_head) = x.lru_next;
    (x.lru_next >= 0 ? configs[size_t(x.lru_next)].lru_prev : lru_tail) = x.lru_prev;
    x.lru_prev = x.lru_next = -1;
  }

  void lru_push_front(int32_t c) {
    Config& x = configs[size_t(c)];
    x.lru_prev = -1;
    x.lru_next = lru_head;
    if (lru_head >= 0) configs[size_t(lru_head)].lru_prev = c;
    lru_head = c;
    if (lru_tail < 0) lru_tail = c;
  }

  // Caches `mask` (dense words) as c's mask, then drops least recently used masks (never c's)
  // until the cache fits its byte budget.
  const CachedMask& cache_mask(int32_t c, std::vector<uint32_t> mask) {
    Config& x = configs[size_t(c)];
    x.mask.assign(std::move(mask));
    ++masks_cached;
    mask_bytes += x.mask.bytes();
    lru_push_front(c);
    while (mask_bytes > options.mask_cache_bytes && lru_tail >= 0 && lru_tail != c) {
      int32_t victim = lru_tail;
      lru_unlink(victim);
      CachedMask& vm = configs[size_t(victim)].mask;
      mask_bytes -= vm.bytes();
      --masks_cached;
      ++mask_evictions;
      vm.clear();
    }
    return configs[size_t(c)].mask;
  }

  // Approximate bytes held: masks, transition tables, configurations, stack nodes, grammar.
  size_t memory_bytes() const {
    size_t grammar = g.states.size() * (sizeof(Grammar::State) + 2 * sizeof(Grammar::ByteEdge)) +
                     g.body_states.size() * 64 + bodies_bytes;
    return mask_bytes + next_tables * sizeof(std::array<int32_t, 256>) +
           configs.size() * (sizeof(Config) + 64) + kernel_words * 2 * sizeof(uint32_t) +
           nodes.size() * (sizeof(nodes[0]) + sizeof(uint32_t) * 2 + 32) + grammar;
  }

  // The mask without stop tokens.
  const CachedMask& body_mask(int32_t c) {
    if (configs[size_t(c)].mask.present) {
      ++mask_hits;
      if (lru_head != c) {
        lru_unlink(c);
        lru_push_front(c);
      }
      return configs[size_t(c)].mask;
    }
    ++mask_misses;
    std::vector<uint32_t> mask(vocab->mask_words(), 0);
    const std::vector<uint32_t> kernel = configs[size_t(c)].kernel;
    bool any_plain = false;
    for (uint32_t n : kernel)
      if (g.states[nodes[n].first].plain_remaining != Grammar::kNotPlain) any_plain = true;
    if (kernel.size() == 1 && any_plain) {
      // String-body fast path: every plain run short enough is allowed; only the other tokens
      // (quotes, escapes, partial UTF-8) are walked.
      int32_t rem = g.states[nodes[kernel[0]].first].plain_remaining;
      if (rem != 0) {
        const auto& plain = vocab->plain_up_to(rem == Grammar::kPlainUnbounded ? -1 : rem);
        std::memcpy(mask.data(), plain.data(), mask.size() * sizeof(uint32_t));
      }
      walk(vocab->exception_trie(), c, mask.data());
    } else if (kernel.size() > 1 && any_plain) {
      // Union over the parse stacks; each single-stack configuration has its own cached mask.
      for (uint32_t n : kernel) {
        std::vector<uint32_t> seeds{n};
        int32_t single = close(seeds);
        if (single == kDead) continue;
        body_mask(single).or_into(mask.data(), mask.size());
      }
    } else if (!kernel.empty()) {
      walk(vocab->trie(), c, mask.data());
    }
    return cache_mask(c, std::move(mask));
  }
};

GrammarIndex::GrammarIndex(Grammar grammar, std::shared_ptr<const Vocabulary> vocab, const GrammarIndexOptions& options)
    : impl_(std::make_unique<Impl>()), vocab_(std::move(vocab)) {
  impl_->g = std::move(grammar);
  impl_->vocab = vocab_.get();
  impl_->options = options;
  for (const auto& b : impl_->g.bodies)
    impl_->bodies_bytes += sizeof(Grammar::Body) + b.live.size() + b.total.size() +
                           (b.dfa ? b.dfa->states.size() * 64 : 0);
  if (impl_->g.rule_start.empty()) fail("grammar has no rules");
  uint32_t root = impl_->node(impl_->g.rule_start[impl_->g.root_rule], kBottom);
  initial_ = impl_->close({root});
  distinct_keys_ = impl_->g.distinct_keys;
  distinct_items_ = impl_->g.distinct_items;
  distinct_literals_ = impl_->g.distinct_literals;
  unenforced_ = impl_->g.unenforced;
  note_memory();
}

GrammarIndex::~GrammarIndex() = default;

int32_t GrammarIndex::step(int32_t config, uint8_t byte) {
  if (config < 0) return kDead;
  budget_detail::enter(memory_bytes());
  int32_t out;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    size_t before = impl_->configs.size() + impl_->next_tables;
    out = impl_->fast_step(config, byte);
    if (impl_->configs.size() + impl_->next_tables != before) note_memory();
  }
  budget_detail::leave(memory_bytes());
  return out;
}

int32_t GrammarIndex::step_bytes(int32_t config, const std::string& bytes) {
  budget_detail::enter(memory_bytes());
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    size_t before = impl_->configs.size() + impl_->next_tables;
    for (char ch : bytes) {
      if (config < 0) break;
      config = impl_->fast_step(config, uint8_t(ch));
    }
    if (impl_->configs.size() + impl_->next_tables != before) note_memory();
  }
  budget_detail::leave(memory_bytes());
  return config < 0 ? kDead : config;
}

void GrammarIndex::note_memory() { memory_bytes_.store(impl_->memory_bytes(), std::memory_order_relaxed); }

bool GrammarIndex::in_unique_array(int32_t config) {
  if (config < 0) return false;
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl::Config& c = impl_->configs[size_t(config)];
  if (c.unique < 0) {
    c.unique = 0;
    for (uint32_t n : c.kernel) {
      for (uint32_t m = n; m != kBottom && !c.unique; m = impl_->nodes[m].second)
        if (impl_->g.states[impl_->nodes[m].first].unique_array) c.unique = 1;
    }
  }
  return c.unique == 1;
}

bool GrammarIndex::accepting(int32_t config) {
  if (config < 0) return false;
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->configs[size_t(config)].accept;
}

void GrammarIndex::fill_mask(int32_t config, uint32_t* out) {
  size_t words = vocab_->mask_words();
  if (config < 0) {
    std::memset(out, 0, words * sizeof(uint32_t));
    return;
  }
  budget_detail::enter(memory_bytes());
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    uint64_t misses = impl_->mask_misses;
    impl_->body_mask(config).copy_to(out, words);
    if (impl_->configs[size_t(config)].accept) {
      for (uint32_t id : vocab_->stop_ids()) out[id >> 5] |= 1u << (id & 31);
    }
    if (impl_->mask_misses != misses) note_memory();
  }
  budget_detail::leave(memory_bytes());
}

size_t GrammarIndex::num_configs() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->configs.size();
}

GrammarIndexStats GrammarIndex::stats() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  GrammarIndexStats st;
  st.configs = impl_->configs.size();
  st.masks_cached = impl_->masks_cached;
  st.mask_bytes = impl_->mask_bytes;
  for (const auto& c : impl_->configs) st.masks_sparse += c.mask.present && c.mask.sparse;
  st.mask_hits = impl_->mask_hits;
  st.mask_misses = impl_->mask_misses;
  st.mask_evictions = impl_->mask_evictions;
  st.memory_bytes = impl_->memory_bytes();
  return st;
}

// ---------------------------------------------------------------- Matcher

Matcher::Matcher(std::shared_ptr<GrammarIndex> index) : index_(std::move(index)) { reset(); }

void Matcher::reset() {
  history_.assign(1, index_->initial());
  stopped_depth_ = 0;
  keys_.reset();
  bracket_flags_.clear();
  text_.clear();
  text_end_.assign(1, 0);
  thought_.assign(1, -1);
}

void Matcher::fill_mask(uint32_t* bitset) {
  if (is_stopped()) {
    std::memset(bitset, 0, vocab().mask_words() * sizeof(uint32_t));
    return;
  }
  if (thinking_budget_ > 0 && thought_.back() >= thinking_budget_) {
    // The thought used its budget: only the closing marker, then the answer.
    if (close_thought_ids_.empty()) {
      for (uint32_t id = 0; id < vocab().size(); ++id)
        if (vocab().bytes(id) == std::string(1, char(marker::kChannelClose))) close_thought_ids_.push_back(id);
    }
    std::memset(bitset, 0, vocab().mask_words() * sizeof(uint32_t));
    index_->fill_mask(history_.back(), bitset);
    for (size_t w = 0; w < vocab().mask_words(); ++w) {
      uint32_t keep = 0;
      for (uint32_t id : close_thought_ids_)
        if ((id >> 5) == w) keep |= 1u << (id & 31);
      bitset[w] &= keep;
    }
    return;
  }
  index_->fill_mask(history_.back(), bitset);
  // Without keys so far nothing can repeat, except a token holding two items of a unique array.
  if (tracking() && (keys_.any_keys() || index_->distinct_items())) filter_repeated_keys(bitset);
}

bool Matcher::opens_unique(int32_t config, std::string_view bytes, size_t i) {
  for (size_t j = 0; j <= i && config != GrammarIndex::kDead; ++j) config = index_->step(config, uint8_t(bytes[j]));
  return index_->in_unique_array(config);
}

namespace {

// Calls fn(id, depth) for every token of `trie` that is a prefix of `path` (depth = its length).
template <typename Fn>
void tokens_on_path(const TokenTrie& t, std::string_view path, Fn&& fn) {
  size_t lo = 0, hi = t.size();
  for (size_t d = 0; d < path.size(); ++d) {
    size_t j = lo;
    bool found = false;
    while (j < hi) {
      if (t.depth[j] == d + 1 && t.byte[j] == uint8_t(path[d])) {
        found = true;
        break;
      }
      j = t.depth[j] == d + 1 ? t.subtree_end[j] : j + 1;
    }
    if (!found) return;
    for (uint32_t k = t.token_begin[j]; k < t.token_begin[j + 1]; ++k) fn(t.tokens[k], d + 1);
    lo = j + 1;
    hi = t.subtree_end[j];
  }
}

bool starts_any(const std::vector<std::string>& used, const std::string& prefix) {
  for (auto& u : used)
    if (u.size() >= prefix.size() && u.compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

}  // namespace

bool Matcher::key_token_ok(uint32_t token) {
  const std::string& bytes = vocab().bytes(token);
  KeyTracker::UniqueFn unique;
  if (index_->distinct_items()) unique = [&](size_t i) { return opens_unique(history_.back(), bytes, i); };
  KeyTracker::Probe p = keys_.probe(bytes, unique);
  if (p.repeats) return false;
  if (!p.in_key || !p.used || !starts_any(*p.used, keys_.probe_key())) return true;
  // The token ends inside a key that is still a prefix of an earlier key: allowed only if some
  // completion is a new key (otherwise the text would be a dead end).
  std::string prefix = keys_.probe_key();
  int32_t c = index_->step_bytes(history_.back(), bytes);
  if (c == GrammarIndex::kDead) return true;  // the grammar refuses it anyway
  return has_fresh_completion(c, prefix, p.escape, *p.used);
}

// Depth-first over the bytes that can continue the key from `config`, closing quote first. A
// completion longer than every used key is new, and so is any key not in `used`. The search
// is bounded (budget): past it the key is taken to have a new completion, which the grammar's
// own liveness makes overwhelmingly likely (only long, narrow key languages reach it).
bool Matcher::has_fresh_completion(int32_t config, const std::string& prefix, int escape,
                                   const std::vector<std::string>& used) {
  // The answer depends on (config, prefix, escape) and the used keys: cached until those change.
  if (fresh_version_ != keys_.keys_version()) {
    fresh_cache_.clear();
    fresh_version_ = keys_.keys_version();
  }
  std::string cache_key(reinterpret_cast<const char*>(&config), sizeof config);
  cache_key.push_back(char(escape + 2));
  cache_key += prefix;
  if (auto it = fresh_cache_.find(cache_key); it != fresh_cache_.end()) return it->second;
  bool result = search_fresh_completion(config, prefix, escape, used);
  fresh_cache_.emplace(std::move(cache_key), result);
  return result;
}

bool Matcher::search_fresh_completion(int32_t config, const std::string& prefix, int escape,
                                      const std::vector<std::string>& used) {
  size_t longest = 0;
  for (auto& u : used) longest = std::max(longest, u.size());
  std::string key = prefix;
  int budget = 20000;
  auto rec = [&](auto&& self, int32_t c, int esc) -> bool {
    if (key.size() > longest) return true;
    for (int i = 0; i < 256; ++i) {
      uint8_t b = uint8_t(i == 0 ? '"' : i == '"' ? 0 : i);
      if (--budget <= 0) return true;
      int32_t n = index_->step(c, b);
      if (n == GrammarIndex::kDead) continue;
      if (esc == 0 && b == '"') {
        if (std::find(used.begin(), used.end(), key) == used.end()) return true;
        continue;
      }
      int next_esc = esc == -1 ? (b == 'u' ? 4 : 0) : esc > 0 ? esc - 1 : b == '\\' ? -1 : 0;
      key.push_back(char(b));
      bool ok = self(self, n, next_esc);
      key.pop_back();
      if (ok) return true;
    }
    return false;
  };
  return rec(rec, config, escape);
}

void Matcher::filter_repeated_keys(uint32_t* bitset) {
  // The tokens refused depend only on the configuration (its cached mask) and the key
  // tracker's state, which stays the same over the plain bytes of a value string: reuse the
  // last answer while both are unchanged (most masks inside long strings).
  int32_t config = history_.back();
  if (filter_config_ == config && filter_version_ == keys_.state_version()) {
    for (uint32_t id : filter_refused_) bitset[id >> 5] &= ~(1u << (id & 31));
    return;
  }
  filter_refused_.clear();
  const Vocabulary& v = vocab();
  // Outside a key and where a quote would not open one (inside a value string, at a value
  // position, in an array), a token with one quote only closes or opens a value string: it
  // cannot touch a key, so only tokens with two or more quotes need the probe there.
  const bool single_quotes_matter = keys_.in_key() || keys_.probe("\"").in_key;
  auto check = [&](uint32_t id) {
    if (((bitset[id >> 5] >> (id & 31)) & 1) && !key_token_ok(id)) {
      bitset[id >> 5] &= ~(1u << (id & 31));
      filter_refused_.push_back(id);
    }
  };
  // Only allowed tokens containing a quote can close a key (834 of Gemma's 262,144: walking
  // that list is much cheaper than scanning the mask's 8,192 words).
  for (uint32_t id : v.quote_tokens()) {
    if (!((bitset[id >> 5] >> (id & 31)) & 1)) continue;
    if (!single_quotes_matter) {
      const std::string& b = v.bytes(id);
      if (std::count(b.begin(), b.end(), '"') < 2) continue;
    }
    check(id);
  }
  // true / false / null items of a unique array: outside a string any allowed token may close
  // or enter one (the mask there is small).
  if (index_->distinct_literals() && !keys_.in_string()) {
    for (size_t w = 0; w < v.mask_words(); ++w)
      for (uint32_t bits = bitset[w]; bits; bits &= bits - 1) check(uint32_t(w * 32 + __builtin_ctz(bits)));
  }
  // Inside a key: tokens without a quote matter only when they keep it a prefix of a used key.
  if (keys_.in_key()) {
    if (const auto* used = keys_.current_keys()) {
      const std::string& p = keys_.key();
      for (auto& u : *used) {
        if (u.size() < p.size() || u.compare(0, p.size(), p) != 0) continue;
        tokens_on_path(v.trie(), std::string_view(u).substr(p.size()), [&](uint32_t id, size_t) { check(id); });
      }
    }
  }
  filter_config_ = config;
  filter_version_ = keys_.state_version();
}

bool Matcher::accept(uint32_t token) {
  if (is_stopped() || token >= vocab().size()) return false;
  int32_t cur = history_.back();
  if (vocab().is_stop(token)) {
    if (!index_->accepting(cur)) return false;
    history_.push_back(cur);
    text_end_.push_back(text_.size());
    thought_.push_back(thought_.back());
    stopped_depth_ = history_.size();
    return true;
  }
  const std::string& bytes = vocab().bytes(token);
  if (bytes.empty()) return false;
  if (thinking_budget_ > 0 && thought_.back() >= thinking_budget_ && bytes != std::string(1, char(marker::kChannelClose)))
    return false;  // the same rule as fill_mask
  int32_t next = index_->step_bytes(cur, bytes);
  if (next == GrammarIndex::kDead) return false;
  if (tracking()) {
    if ((keys_.any_keys() || index_->distinct_items()) && !key_token_ok(token)) return false;
    KeyTracker::UniqueFn unique;
    size_t at = text_.size();
    if (index_->distinct_items()) {
      unique = [&](size_t i) {
        bool u = opens_unique(cur, bytes, i);
        bracket_flags_.push_back({at + i, u});
        return u;
      };
    }
    keys_.feed(bytes, unique);
    text_ += bytes;
  }
  history_.push_back(next);
  text_end_.push_back(text_.size());
  // Thought channel bookkeeping (marker bytes only come from the reply markers).
  int32_t t = thought_.back();
  for (char ch : bytes) {
    if (uint8_t(ch) == marker::kChannelOpen) t = 0;
    if (uint8_t(ch) == marker::kChannelClose) t = -1;
  }
  if (t >= 0 && bytes.find(char(marker::kChannelOpen)) == std::string::npos) ++t;
  thought_.push_back(t);
  return true;
}

void Matcher::rollback(size_t n) {
  if (n > num_accepted()) fail("rollback of ", n, " tokens but only ", num_accepted(), " accepted");
  history_.resize(history_.size() - n);
  text_end_.resize(history_.size());
  thought_.resize(history_.size());
  if (stopped_depth_ > history_.size()) stopped_depth_ = 0;
  if (tracking() && text_.size() != text_end_.back()) {
    text_.resize(text_end_.back());
    while (!bracket_flags_.empty() && bracket_flags_.back().first >= text_.size()) bracket_flags_.pop_back();
    keys_.reset();
    // The same '[' bytes ask again, in order: answer from what accept recorded.
    size_t k = 0;
    keys_.feed(text_, [&](size_t i) {
      while (k < bracket_flags_.size() && bracket_flags_[k].first < i) ++k;
      return k < bracket_flags_.size() && bracket_flags_[k].first == i && bracket_flags_[k].second;
    });
  }
}

bool Matcher::is_accepting() { return !is_stopped() && index_->accepting(history_.back()); }

std::vector<uint32_t> Matcher::forced_tokens() {
  std::vector<uint32_t> out;
  if (is_stopped()) return out;
  // Forced bytes: while exactly one byte continues and the value cannot end here.
  std::string forced;
  int32_t c = history_.back();
  while (forced.size() < 4096 && !index_->accepting(c)) {
    int32_t only = GrammarIndex::kDead;
    int count = 0;
    uint8_t only_byte = 0;
    for (int b = 0; b < 256 && count < 2; ++b) {
      int32_t n = index_->step(c, uint8_t(b));
      if (n != GrammarIndex::kDead) {
        ++count;
        only = n;
        only_byte = uint8_t(b);
      }
    }
    if (count != 1) break;
    forced.push_back(char(only_byte));
    c = only;
  }
  // Greedy longest match over the trie, using only tokens wholly inside the forced bytes.
  const TokenTrie& t = vocab().trie();
  size_t pos = 0;
  while (pos < forced.size()) {
    size_t i = 0, best_len = 0;
    uint32_t best = UINT32_MAX;
    size_t d = 0;
    // Descend: children of the current node are the nodes of depth d+1 inside its subtree.
    size_t lo = 0, hi = t.size();
    while (pos + d < forced.size()) {
      uint8_t want = uint8_t(forced[pos + d]);
      size_t j = lo;
      bool found = false;
      while (j < hi) {
        if (t.depth[j] == d + 1 && t.byte[j] == want) {
          found = true;
          break;
        }
        j = t.depth[j] == d + 1 ? t.subtree_end[j] : j + 1;
      }
      if (!found) break;
      i = j;
      ++d;
      if (t.token_begin[i] < t.token_begin[i + 1]) {
        best = t.tokens[t.token_begin[i]];
        best_len = d;
      }
      lo = i + 1;
      hi = t.subtree_end[i];
    }
    if (best == UINT32_MAX) break;
    out.push_back(best);
    pos += best_len;
  }
  return out;
}

}  // namespace ringlm::guided
