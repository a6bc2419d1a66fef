// Token-level matching of a Grammar over a Vocabulary.
//
// GrammarIndex (one per compiled grammar + vocabulary, shared by all requests, thread-safe) runs
// the grammar as a pushdown automaton over bytes. A matching position is a *configuration*: the
// set of parse stacks still alive, interned so equal configurations share one id. Transitions
// (configuration, byte) -> configuration are computed lazily and memoised in 256-entry tables,
// and each configuration's token mask is computed on first use (a preorder scan of the vocabulary
// trie, skipping subtrees whose prefix is already dead) and kept, as bit words or, when few
// tokens are allowed, as their id list, in a byte-bounded LRU cache: an
// evicted mask is simply recomputed (the same bits) when its configuration comes back.
//
// Matcher is one generation's cursor: fill_mask / accept / rollback / forced_tokens. For grammars
// whose objects may take several keys from one infinite language it also tracks the keys of the
// text so far (KeyTracker) and refuses tokens that would repeat one: a per-request filter over
// the shared cached mask.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "guided/grammar.h"
#include "guided/key_tracker.h"
#include "guided/vocabulary.h"

namespace ringlm::guided {

struct GrammarIndexOptions {
  // Upper bound on the bytes of cached token masks. A dense mask is vocab().mask_words() * 4
  // bytes (32 KiB for a 262,144-token vocabulary, so the default keeps at least 4096 of them);
  // one that allows few tokens is kept as its id list, at most an eighth of that. The least
  // recently used masks are dropped beyond it; at least one mask is always kept.
  size_t mask_cache_bytes = size_t(128) << 20;
};

struct GrammarIndexStats {
  size_t configs = 0;         // configurations interned so far (never dropped)
  size_t masks_cached = 0;    // masks held now
  size_t mask_bytes = 0;      // their bytes
  size_t masks_sparse = 0;    // of those, kept as id lists (few tokens allowed)
  uint64_t mask_hits = 0, mask_misses = 0, mask_evictions = 0;
  size_t memory_bytes = 0;    // approximate total footprint (masks + transition tables + stacks)
};

class GrammarIndex {
 public:
  static constexpr int32_t kDead = -1;

  GrammarIndex(Grammar grammar, std::shared_ptr<const Vocabulary> vocab, const GrammarIndexOptions& options = {});
  ~GrammarIndex();

  const Vocabulary& vocab() const { return *vocab_; }
  int32_t initial() const { return initial_; }
  // The grammar lets some object repeat a key (Grammar::distinct_keys): Matchers filter those.
  bool distinct_keys() const { return distinct_keys_; }
  // Some array must have distinct string items (Grammar::distinct_items): Matchers filter those.
  bool distinct_items() const { return distinct_items_; }
  bool distinct_literals() const { return distinct_literals_; }
  // Lenient schemas: the assertions only the validator checks (Grammar::unenforced).
  const std::vector<std::string>& unenforced() const { return unenforced_; }

  // The following take the index lock; safe from any thread.
  int32_t step(int32_t config, uint8_t byte);
  int32_t step_bytes(int32_t config, const std::string& bytes);  // kDead if rejected
  // Some parse stack of `config` is inside an array marked Grammar::State::unique_array. Right
  // after a '[' outside a string this says whether that array needs distinct items (the
  // compiler keeps such an array from sharing a position with an array that does not).
  bool in_unique_array(int32_t config);
  bool accepting(int32_t config);
  // Copies the allowed-token bitset of `config` (bit id set = allowed) into out (mask_words()).
  void fill_mask(int32_t config, uint32_t* out);
  size_t num_configs();
  GrammarIndexStats stats();
  // Approximate bytes held (masks, transition tables, parse-stack nodes, the grammar); grows as
  // configurations are discovered. Lock-free, for cache accounting.
  size_t memory_bytes() const { return memory_bytes_.load(std::memory_order_relaxed); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<size_t> memory_bytes_{0};
  void note_memory();  // refreshes memory_bytes_; call with the lock held
  std::shared_ptr<const Vocabulary> vocab_;
  int32_t initial_;
  bool distinct_keys_ = false;
  bool distinct_items_ = false;
  bool distinct_literals_ = false;
  std::vector<std::string> unenforced_;
};

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<GrammarIndex> index);

  // Allowed tokens at the current position: bit (id & 31) of word (id >> 5). Stop tokens are
  // allowed exactly when the grammar can end here. `words` must be vocab().mask_words().
  void fill_mask(uint32_t* bitset);
  // Advances by one token; false (and no change) if the token is not allowed.
  bool accept(uint32_t token);
  // Undoes the last n accepted tokens (n <= num_accepted()).
  void rollback(size_t n);
  // The tokens every valid continuation starts with (e.g. a fixed property key), as a greedy
  // longest-match tokenisation of the forced bytes; empty when the next token is a real choice.
  std::vector<uint32_t> forced_tokens();
  // True when the text so far is a complete value (a stop token is allowed).
  bool is_accepting();
  // True after a stop token was accepted.
  bool is_stopped() const { return stopped_depth_ > 0; }
  size_t num_accepted() const { return history_.size() - 1; }
  // Reply grammars with a thought channel (reply_grammar.h): after `tokens` tokens inside the
  // thought, only the closing marker is allowed (0 = no limit).
  void set_thinking_budget(int tokens) { thinking_budget_ = tokens; }
  bool in_thought() const { return thought_.back() >= 0; }
  const Vocabulary& vocab() const { return index_->vocab(); }
  void reset();

 private:
  // Distinct keys (GrammarIndex::distinct_keys): a token is refused when it would close a key
  // already present in the same object, or end inside a key whose every completion is one.
  bool key_token_ok(uint32_t token);
  // Distinct keys or distinct string items (GrammarIndex::distinct_items, uniqueItems): the
  // same filter, the tracker's frames for unique arrays holding their items as "keys".
  bool tracking() const { return index_->distinct_keys() || index_->distinct_items(); }
  // The '[' at bytes[i], fed from `config`, opens an array that needs distinct items.
  bool opens_unique(int32_t config, std::string_view bytes, size_t i);
  bool has_fresh_completion(int32_t config, const std::string& prefix, int escape,
                            const std::vector<std::string>& used);
  bool search_fresh_completion(int32_t config, const std::string& prefix, int escape,
                               const std::vector<std::string>& used);
  void filter_repeated_keys(uint32_t* bitset);

  std::shared_ptr<GrammarIndex> index_;
  std::vector<int32_t> history_;  // configuration after each accepted token (front: initial)
  size_t stopped_depth_ = 0;      // history size when the stop token was accepted, 0 if none
  KeyTracker keys_;               // only fed when the grammar needs distinct keys
  std::string text_;              // accepted bytes (tracking() only: rollback re-feeds keys_)
  // Text position of each '[' the tracker asked about, and the answer (distinct_items only).
  std::vector<std::pair<size_t, bool>> bracket_flags_;
  std::vector<size_t> text_end_;  // text_ size after each history_ entry
  // Per history_ entry: tokens accepted inside an open thought channel, -1 outside one.
  std::vector<int32_t> thought_;
  int thinking_budget_ = 0;
  std::vector<uint32_t> close_thought_ids_;  // tokens whose bytes are the closing marker (lazy)
  // Caches of the distinct-key filter: the tokens it refused at (configuration, tracker state),
  // and fresh-completion answers while the used keys stay the same.
  int32_t filter_config_ = GrammarIndex::kDead;
  uint64_t filter_version_ = 0;
  std::vector<uint32_t> filter_refused_;
  uint64_t fresh_version_ = 0;
  std::unordered_map<std::string, bool> fresh_cache_;
};

}  // namespace ringlm::guided
