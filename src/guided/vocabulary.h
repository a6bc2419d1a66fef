// The token vocabulary as the matcher sees it: the bytes each token adds to the text, and which
// ids stop generation. Built once per tokenizer and shared by every grammar and request; it
// precomputes the byte trie of all tokens (flattened in preorder so a mask is one linear scan
// with subtree skips) and the "plain string" token classes for the string-body fast path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ringlm {
class Tokenizer;
}

namespace ringlm::guided {

// A byte trie over a subset of tokens, flattened in preorder.
struct TokenTrie {
  std::vector<uint8_t> byte;        // byte on the edge into node i
  std::vector<uint16_t> depth;      // 1 for children of the root
  std::vector<uint32_t> subtree_end;  // first node after node i's subtree
  std::vector<uint32_t> token_begin;  // tokens ending at node i: tokens[token_begin[i] .. token_begin[i+1])
  std::vector<uint32_t> tokens;
  // Per entry of `tokens`: the first byte offset from which the token is a run of plain JSON
  // string code points to its end (its length when it ends with a non-plain byte).
  std::vector<uint16_t> plain_from;
  uint16_t max_depth = 0;
  size_t size() const { return byte.size(); }
};

class Vocabulary {
 public:
  // token_bytes[id]: bytes the token adds (empty for special tokens, which are never allowed
  // by a grammar); stop_ids: tokens allowed exactly when the grammar may end.
  Vocabulary(std::vector<std::string> token_bytes, std::vector<uint32_t> stop_ids);

  size_t size() const { return bytes_.size(); }
  size_t mask_words() const { return (bytes_.size() + 31) / 32; }
  const std::string& bytes(uint32_t id) const { return bytes_[id]; }
  bool is_stop(uint32_t id) const { return id < is_stop_.size() && is_stop_[id]; }
  const std::vector<uint32_t>& stop_ids() const { return stop_ids_; }

  const TokenTrie& trie() const { return trie_; }
  // Tokens that are not a run of plain JSON-string code points (contain '"', '\\', a control
  // character, or an incomplete / invalid UTF-8 sequence).
  const TokenTrie& exception_trie() const { return exception_trie_; }
  // Tokens containing a '"' byte (the only ones that can close an object key).
  const std::vector<uint32_t>& quote_tokens() const { return quote_tokens_; }
  // The same set as a bitset (mask_words() words), to intersect with a mask word by word.
  const std::vector<uint32_t>& quote_bits() const { return quote_bits_; }
  // Bitset of plain tokens with at most `n` code points (n >= 1; n beyond the longest = all).
  const std::vector<uint32_t>& plain_up_to(int64_t n) const;

 private:
  std::vector<std::string> bytes_;
  std::vector<uint32_t> stop_ids_;
  std::vector<char> is_stop_;
  TokenTrie trie_, exception_trie_;
  std::vector<uint32_t> quote_tokens_, quote_bits_;
  std::vector<std::vector<uint32_t>> plain_le_;  // [n] for n = 0..max plain length
};

// Adapter: the vocabulary of a loaded tokenizer (token_bytes, eos_ids as stop tokens, or the
// given stop ids). The reply markers (<|channel>, <channel|>, <|tool_call>, <tool_call|>) get
// their marker bytes (reply_grammar.h); byte-fallback tokens for bytes 0xF8-0xFF get none.
std::shared_ptr<const Vocabulary> vocabulary_from_tokenizer(const Tokenizer& tok);
std::shared_ptr<const Vocabulary> vocabulary_from_tokenizer(const Tokenizer& tok, std::vector<uint32_t> stop_ids);

}  // namespace ringlm::guided
