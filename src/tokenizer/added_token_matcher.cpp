#include "tokenizer/added_token_matcher.h"

#include <algorithm>
#include <map>

namespace ringlm::tok {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<Entry>& entries) {
  // Build a pointer trie with ordered children, then flatten it into sorted edge ranges.
  std::vector<std::map<uint8_t, int32_t>> kids(1);
  std::vector<int32_t> term(1, -1);
  std::vector<uint8_t> term_special(1, 0);
  for (const Entry& e : entries) {
    if (e.content.empty()) continue;
    int32_t node = 0;
    for (char c : e.content) {
      const auto b = static_cast<uint8_t>(c);
      auto it = kids[node].find(b);
      if (it == kids[node].end()) {
        const auto fresh = static_cast<int32_t>(kids.size());
        kids[node].emplace(b, fresh);
        kids.emplace_back();
        term.push_back(-1);
        term_special.push_back(0);
        node = fresh;
      } else {
        node = it->second;
      }
    }
    // Two added tokens with the same content: the later one wins (as a map insert would).
    term[node] = e.index;
    term_special[node] = e.special ? 1 : 0;
    starts_[static_cast<uint8_t>(e.content[0])] = true;
  }
  first_edge_.reserve(kids.size() + 1);
  for (const auto& k : kids) {
    first_edge_.push_back(static_cast<int32_t>(edges_.size()));
    for (const auto& [b, child] : k) edges_.push_back(Edge{b, child});
  }
  first_edge_.push_back(static_cast<int32_t>(edges_.size()));
  terminal_ = std::move(term);
  terminal_special_ = std::move(term_special);
}

int32_t AddedTokenMatcher::child(int32_t node, uint8_t byte) const {
  const Edge* lo = edges_.data() + first_edge_[node];
  const Edge* hi = edges_.data() + first_edge_[node + 1];
  if (hi - lo <= 8) {
    for (; lo != hi; ++lo)
      if (lo->byte == byte) return lo->child;
    return -1;
  }
  const Edge* it = std::lower_bound(lo, hi, byte, [](const Edge& e, uint8_t b) { return e.byte < b; });
  return (it != hi && it->byte == byte) ? it->child : -1;
}

AddedTokenMatcher::Match AddedTokenMatcher::find(std::string_view text, size_t from,
                                                 bool allow_special) const {
  if (edges_.empty()) return {};
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  for (size_t i = from; i < n; ++i) {
    if (!starts_[p[i]]) continue;
    int32_t node = 0;
    Match best;
    for (size_t j = i; j < n; ++j) {
      node = child(node, p[j]);
      if (node < 0) break;
      if (terminal_[node] >= 0 && (allow_special || !terminal_special_[node])) {
        best = Match{i, j + 1 - i, terminal_[node]};
      }
    }
    if (best.index >= 0) return best;
  }
  return {};
}

}  // namespace ringlm::tok
