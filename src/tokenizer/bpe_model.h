// The BPE model: turns one pre-tokenized word into ids by starting from single characters
// (or byte-fallback / unknown tokens) and applying merge rules lowest rank first, leftmost
// first on ties — the order of Hugging Face's heap-based Word::merge_all. Heap + linked
// list makes a word of n characters cost O(n log n), which matters because Gemma has no
// pre-split: a whole line is one word.
//
// Speed-up that changes no result: a word is cut into chunks at places no vocabulary piece
// can span (before the space marker "▁" when the character in front of it never precedes
// "▁" inside a piece — derived from the vocabulary at load time). Merges never cross such a
// cut, so each chunk can be merged on its own, and repeated chunks (words) come from a
// per-thread cache.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hash_tables.h"

namespace ringlm::tok {

struct BpeScratch {
  struct Symbol {
    int32_t id;    // -1 once merged into its left neighbour
    int32_t prev;  // index of the previous live symbol, -1 at the start
    int32_t next;  // index of the next live symbol, -1 at the end
  };
  std::vector<Symbol> symbols;
  std::vector<uint64_t> heap;  // (rank << 32) | position, min-heap
};

class BpeModel {
 public:
  StringIdMap vocab;  // model vocabulary (not the added tokens)
  PairMergeMap merges;
  std::vector<int32_t> bmp_ids;          // id of each single character below U+10000, or -1
  std::array<int32_t, 256> byte_ids{};   // id of "<0xNN>", or -1
  int32_t unk_id = -1;
  bool byte_fallback = false;
  bool fuse_unk = false;
  bool ignore_merges = false;

  // Call once the fields above are set: builds the character table and the chunking rule.
  // `boundary`: the space marker words are cut before ("▁" for Gemma), or "" for none.
  void finish(const std::string& boundary);

  // Appends the ids of `word` to `out`. Throws ringlm::Error if a character has no token
  // and there is neither byte fallback nor an unknown token.
  void encode_word(std::string_view word, std::vector<int32_t>& out, BpeScratch& scratch) const;
  // Same without chunking or caching (the reference path; tests compare the two).
  void encode_word_uncached(std::string_view word, std::vector<int32_t>& out, BpeScratch& scratch) const;

 private:
  void initial_symbols(std::string_view word, BpeScratch& scratch) const;
  void encode_chunk_cached(std::string_view chunk, std::vector<int32_t>& out, BpeScratch& scratch) const;
  bool cut_allowed_before(std::string_view word, size_t pos) const;

  std::string boundary_;        // "" disables chunking
  StringIdMap unsafe_before_;   // characters that some piece has directly before boundary_
  uint64_t serial_ = 0;         // identifies this model to the per-thread chunk cache
};

}  // namespace ringlm::tok
