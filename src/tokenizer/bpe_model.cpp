#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <atomic>
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
      id = bmp_ids[b];
    } else {
      len = utf8_char_len(word, i);
      // Bytes that are not valid UTF-8 are taken one at a time; they can only be encoded
      // by byte fallback (or as unknown), so decoding gives back the same bytes.
      if (len == 0) {
        len = 1;
        id = vocab.find(word.substr(i, 1));
      } else if (len <= 3) {
        id = bmp_ids[utf8_decode(word, i, len)];
      } else {
        id = vocab.find(word.substr(i, len));
      }
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

namespace {

std::atomic<uint64_t> next_serial{1};

// Chunks longer than this are merged every time (they are rarely repeated).
constexpr size_t kMaxCachedChunk = 64;

struct ChunkCache {
  uint64_t owner = 0;
  StringIdMap index;             // chunk -> entry
  std::vector<uint32_t> starts;  // entry -> first id in `ids`; one extra at the end
  std::vector<int32_t> ids;
};

ChunkCache& chunk_cache() {
  thread_local ChunkCache cache;
  return cache;
}

}  // namespace

void BpeModel::finish(const std::string& boundary) {
  serial_ = next_serial.fetch_add(1);
  bmp_ids.assign(0x10000, -1);
  // Every single-character piece below U+10000 gets a direct slot (the hot path of
  // building the initial symbols).
  vocab.for_each([&](std::string_view piece, int32_t id) {
    const size_t n = piece.empty() ? 0 : utf8_char_len(piece, 0);
    if (n == piece.size() && n > 0 && n <= 3) bmp_ids[utf8_decode(piece, 0, n)] = id;
  });
  boundary_.clear();
  unsafe_before_ = StringIdMap();
  // Chunking needs the marker to be one valid character with its own token.
  if (boundary.empty() || utf8_char_len(boundary, 0) != boundary.size() || vocab.find(boundary) < 0) return;
  boundary_ = boundary;
  vocab.for_each([&](std::string_view piece, int32_t) {
    for (size_t p = piece.find(boundary_, 1); p != std::string_view::npos; p = piece.find(boundary_, p + 1)) {
      size_t q = p - 1;
      while (q > 0 && (static_cast<unsigned char>(piece[q]) & 0xC0) == 0x80 && p - q < 4) --q;
      const std::string_view before = piece.substr(q, p - q);
      if (before != boundary_) unsafe_before_.insert(before, 0);
    }
  });
}

bool BpeModel::cut_allowed_before(std::string_view word, size_t pos) const {
  // The character in front of `pos` must be a whole valid character that never precedes
  // the marker inside a vocabulary piece.
  size_t q = pos - 1;
  while (q > 0 && (static_cast<unsigned char>(word[q]) & 0xC0) == 0x80 && pos - q < 4) --q;
  if (utf8_char_len(word, q) != pos - q) return false;
  const std::string_view before = word.substr(q, pos - q);
  // It must also be a token of its own: a byte-fallback or unknown symbol could merge
  // in ways the piece scan does not see.
  return before != boundary_ && unsafe_before_.find(before) < 0 && vocab.find(before) >= 0;
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
  if (boundary_.empty()) {
    encode_chunk_cached(word, out, scratch);
    return;
  }
  size_t start = 0;
  for (size_t p = word.find(boundary_, 1); p != std::string_view::npos; p = word.find(boundary_, p + 1)) {
    if (!cut_allowed_before(word, p)) continue;
    encode_chunk_cached(word.substr(start, p - start), out, scratch);
    start = p;
  }
  encode_chunk_cached(word.substr(start), out, scratch);
}

void BpeModel::encode_chunk_cached(std::string_view chunk, std::vector<int32_t>& out, BpeScratch& scratch) const {
  if (chunk.size() > kMaxCachedChunk) {
    encode_word_uncached(chunk, out, scratch);
    return;
  }
  ChunkCache& cache = chunk_cache();
  if (cache.owner != serial_ || cache.index.size() >= (1u << 16)) {
    cache.index.clear();
    cache.starts.assign(1, 0);
    cache.ids.clear();
    cache.owner = serial_;
  }
  const int32_t entry = cache.index.find(chunk);
  if (entry >= 0) {
    out.insert(out.end(), cache.ids.begin() + cache.starts[entry], cache.ids.begin() + cache.starts[entry + 1]);
    return;
  }
  const size_t before = out.size();
  encode_word_uncached(chunk, out, scratch);
  cache.ids.insert(cache.ids.end(), out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
  cache.starts.push_back(static_cast<uint32_t>(cache.ids.size()));
  cache.index.insert(chunk, static_cast<int32_t>(cache.starts.size() - 2));
}

void BpeModel::encode_word_uncached(std::string_view word, std::vector<int32_t>& out, BpeScratch& scratch) const {
  if (word.empty()) return;
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
