#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <functional>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace ringlm::tok {

void BpeModel::initial_symbols(std::string_view word, BpeScratch& scratch) const {
  auto& syms = scratch.symbols;
  syms.clear();
  bool last_is_fused_unk = false;
  auto push = [&](int32_t id) {
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back(BpeScratch::Symbol{id, idx - 1, -1});
    if (idx > 0) syms[idx - 1].next = idx;
  };
  const size_t n = word.size();
  for (size_t i = 0; i < n;) {
    const auto b = static_cast<unsigned char>(word[i]);
    size_t len;
    int32_t id;
    if (b < 0x80) {
      len = 1;
      id = ascii_ids[b];
    } else {
      len = utf8_char_len(word, i);
      // Bytes that are not valid UTF-8 are taken one at a time; they can only be encoded
      // by byte fallback (or as unknown), so decoding gives back the same bytes.
      if (len == 0) len = 1;
      id = vocab.find(word.substr(i, len));
    }
    if (id >= 0) {
      push(id);
      last_is_fused_unk = false;
    } else {
      bool done = false;
      if (byte_fallback) {
        bool all = true;
        for (size_t k = 0; k < len; ++k) all = all && byte_ids[static_cast<unsigned char>(word[i + k])] >= 0;
        if (all) {
          for (size_t k = 0; k < len; ++k) push(byte_ids[static_cast<unsigned char>(word[i + k])]);
          last_is_fused_unk = false;
          done = true;
        }
      }
      if (!done) {
        if (unk_id < 0) {
          fail("tokenizer: character at byte ", i, " of a word has no token and the model has no unk_token");
        }
        if (!(fuse_unk && last_is_fused_unk)) push(unk_id);
        last_is_fused_unk = true;
      }
    }
    i += len;
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out, BpeScratch& scratch) const {
  if (word.empty()) return;
  if (ignore_merges) {
    const int32_t whole = vocab.find(word);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  initial_symbols(word, scratch);
  auto& syms = scratch.symbols;
  if (syms.size() >= (size_t{1} << 31)) fail("tokenizer: word of ", word.size(), " bytes is too long");
  auto& heap = scratch.heap;
  heap.clear();
  const std::greater<uint64_t> min_first;
  auto push_pair = [&](int32_t pos) {
    const int32_t nx = syms[pos].next;
    const MergeRule r = merges.find(syms[pos].id, syms[nx].id);
    if (r.rank < 0) return;
    heap.push_back((static_cast<uint64_t>(r.rank) << 32) | static_cast<uint32_t>(pos));
    std::push_heap(heap.begin(), heap.end(), min_first);
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) {
    const MergeRule r = merges.find(syms[i].id, syms[i + 1].id);
    if (r.rank >= 0) heap.push_back((static_cast<uint64_t>(r.rank) << 32) | static_cast<uint32_t>(i));
  }
  std::make_heap(heap.begin(), heap.end(), min_first);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), min_first);
    const uint64_t top = heap.back();
    heap.pop_back();
    const auto rank = static_cast<int32_t>(top >> 32);
    const auto pos = static_cast<int32_t>(top & 0xFFFFFFFFu);
    auto& s = syms[pos];
    if (s.id < 0 || s.next < 0) continue;  // merged away, or now at the end
    // The pair at `pos` may have changed since this entry was queued; the rank identifies it.
    const MergeRule r = merges.find(s.id, syms[s.next].id);
    if (r.rank != rank) continue;
    const int32_t gone = s.next;
    s.id = r.result;
    s.next = syms[gone].next;
    syms[gone].id = -1;
    if (s.next >= 0) syms[s.next].prev = pos;
    if (s.prev >= 0) push_pair(s.prev);
    if (s.next >= 0) push_pair(pos);
  }
  // Position 0 is never merged away (merges keep the left position), so it heads the list.
  for (int32_t i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

}  // namespace ringlm::tok
