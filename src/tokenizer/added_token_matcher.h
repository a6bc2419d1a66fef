// Finds added tokens in text: leftmost match first, longest at that position (what Hugging
// Face's Aho-Corasick "LeftmostLongest" and tokenizers.js's trie splitter both do).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringlm::tok {

class AddedTokenMatcher {
 public:
  struct Entry {
    std::string content;  // bytes to match
    int32_t index;        // caller's index (into its added-token list)
    bool special;         // skipped when special tokens are not being parsed
  };

  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(const std::vector<Entry>& entries);

  bool empty() const { return edges_.empty(); }

  struct Match {
    size_t start = std::string_view::npos;
    size_t length = 0;
    int32_t index = -1;
  };
  // The first match starting at or after `from`, or start == npos if none.
  Match find(std::string_view text, size_t from, bool allow_special) const;

 private:
  struct Edge {
    uint8_t byte;
    int32_t child;
  };
  // Node n's edges are edges_[first_edge_[n] .. first_edge_[n + 1]), sorted by byte.
  std::vector<int32_t> first_edge_;
  std::vector<Edge> edges_;
  std::vector<int32_t> terminal_;          // caller index ending at node n, or -1
  std::vector<uint8_t> terminal_special_;  // that token is special
  std::array<bool, 256> starts_{};         // bytes some entry starts with
  int32_t child(int32_t node, uint8_t byte) const;
};

}  // namespace ringlm::tok
