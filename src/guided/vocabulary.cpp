#include "guided/vocabulary.h"

#include <algorithm>
#include <numeric>

#include "util/error.h"

namespace ringlm::guided {
namespace {

// Code points in a complete, valid, plain UTF-8 run, or -1.
int64_t plain_length(const std::string& s) {
  int64_t n = 0;
  size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    int extra;
    uint32_t cp;
    if (b < 0x80) {
      if (b < 0x20 || b == '"' || b == '\\') return -1;
      cp = b, extra = 0;
    } else if (b >= 0xC2 && b <= 0xDF) {
      cp = b & 0x1F, extra = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      cp = b & 0x0F, extra = 2;
    } else if (b >= 0xF0 && b <= 0xF4) {
      cp = b & 0x07, extra = 3;
    } else {
      return -1;
    }
    if (i + extra >= s.size() + (extra ? 0 : 1) && extra) return -1;
    for (int k = 1; k <= extra; ++k) {
      if (i + k >= s.size()) return -1;
      auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return -1;
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
    ++n;
    i += extra + 1;
  }
  return n;
}

TokenTrie build_trie(const std::vector<std::string>& bytes, std::vector<uint32_t> ids) {
  std::sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return bytes[a] < bytes[b] || (bytes[a] == bytes[b] && a < b); });
  TokenTrie t;
  std::vector<uint32_t> stack;  // node index per depth-1
  const std::string* prev = nullptr;
  auto close_to = [&](size_t depth) {
    while (stack.size() > depth) {
      t.subtree_end[stack.back()] = uint32_t(t.byte.size());
      stack.pop_back();
    }
  };
  std::vector<std::pair<uint32_t, uint32_t>> node_tokens;  // (node, token)
  for (uint32_t id : ids) {
    const std::string& w = bytes[id];
    if (w.size() > 65535) fail("token ", id, " is longer than 65535 bytes");
    size_t lcp = 0;
    if (prev) {
      size_t lim = std::min(prev->size(), w.size());
      while (lcp < lim && (*prev)[lcp] == w[lcp]) ++lcp;
    }
    close_to(lcp);
    for (size_t d = lcp; d < w.size(); ++d) {
      stack.push_back(uint32_t(t.byte.size()));
      t.byte.push_back(uint8_t(w[d]));
      t.depth.push_back(uint16_t(d + 1));
      t.subtree_end.push_back(0);
      t.max_depth = std::max<uint16_t>(t.max_depth, uint16_t(d + 1));
    }
    node_tokens.emplace_back(stack.back(), id);
    prev = &w;
  }
  close_to(0);
  t.token_begin.assign(t.byte.size() + 1, 0);
  for (auto& [node, id] : node_tokens) t.token_begin[node + 1]++;
  for (size_t i = 1; i < t.token_begin.size(); ++i) t.token_begin[i] += t.token_begin[i - 1];
  t.tokens.resize(node_tokens.size());
  std::vector<uint32_t> fill(t.token_begin.begin(), t.token_begin.end() - 1);
  for (auto& [node, id] : node_tokens) t.tokens[fill[node]++] = id;
  t.plain_from.resize(t.tokens.size());
  for (size_t k = 0; k < t.tokens.size(); ++k) {
    const std::string& w = bytes[t.tokens[k]];
    // Longest plain suffix starting at a code point boundary.
    size_t from = w.size();
    for (size_t p = w.size(); p-- > 0;) {
      auto c = static_cast<unsigned char>(w[p]);
      if ((c & 0xC0) == 0x80) continue;  // continuation byte: not a boundary
      if (plain_length(w.substr(p)) < 0) break;
      from = p;
    }
    t.plain_from[k] = uint16_t(from);
  }
  return t;
}

}  // namespace

Vocabulary::Vocabulary(std::vector<std::string> token_bytes, std::vector<uint32_t> stop_ids)
    : bytes_(std::move(token_bytes)), stop_ids_(std::move(stop_ids)) {
  is_stop_.assign(bytes_.size(), 0);
  for (uint32_t id : stop_ids_) {
    if (id >= bytes_.size()) fail("stop token id ", id, " is outside the vocabulary of ", bytes_.size());
    is_stop_[id] = 1;
  }
  std::vector<uint32_t> all, exceptions;
  std::vector<int64_t> plain(bytes_.size(), -1);
  int64_t max_plain = 0;
  for (uint32_t id = 0; id < bytes_.size(); ++id) {
    if (bytes_[id].empty() || is_stop_[id]) continue;
    all.push_back(id);
    if (bytes_[id].find('"') != std::string::npos) {
      quote_tokens_.push_back(id);
      if (quote_bits_.empty()) quote_bits_.assign(mask_words(), 0);
      quote_bits_[id >> 5] |= 1u << (id & 31);
    }
    int64_t n = plain_length(bytes_[id]);
    if (n > 0) {
      plain[id] = n;
      max_plain = std::max(max_plain, n);
    } else {
      exceptions.push_back(id);
    }
  }
  if (quote_bits_.empty()) quote_bits_.assign(mask_words(), 0);
  trie_ = build_trie(bytes_, all);
  exception_trie_ = build_trie(bytes_, exceptions);
  plain_le_.assign(size_t(max_plain) + 1, std::vector<uint32_t>(mask_words(), 0));
  for (uint32_t id = 0; id < bytes_.size(); ++id) {
    if (plain[id] > 0) plain_le_[size_t(plain[id])][id >> 5] |= 1u << (id & 31);
  }
  for (size_t n = 1; n < plain_le_.size(); ++n) {
    for (size_t w = 0; w < mask_words(); ++w) plain_le_[n][w] |= plain_le_[n - 1][w];
  }
}

const std::vector<uint32_t>& Vocabulary::plain_up_to(int64_t n) const {
  if (n < 0 || n >= int64_t(plain_le_.size())) return plain_le_.back();
  return plain_le_[size_t(n)];
}

}  // namespace ringlm::guided
