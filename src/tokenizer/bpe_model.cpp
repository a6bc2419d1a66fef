#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <atomic>
#include <functional>

#include "util/utf8.h"
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
      len = utf8::char_len(word, i);
      // Bytes that are not valid UTF-8 are taken one at a time; they can only be encoded
      // by byte fallback (or as unknown), so decoding gives back the same bytes.
      if (len == 0) {
        len = 1;
        id = vocab.find(word.substr(i, 1));
      } else if (len <= 3) {
        id = bmp_ids[utf8::decode_at(word, i, len)];
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
    const size_t n = piece.empty() ? 0 : utf8::char_len(piece, 0);
    if (n == piece.size() && n > 0 && n <= 3) bmp_ids[utf8::decode_at(piece, 0, n)] = id;
  });
  boundary_.clear();
  unsafe_before_ = StringIdMap();
  // Chunking needs the marker to be one valid character with its own token.
  if (boundary.empty() || utf8::char_len(boundary, 0) != boundary.size() || vocab.find(boundary) < 0) return;
  boundary_ = boundary;
  vocab.for_each([&](std::string_view piece, int32_t) {
    for (size_t p = piece.find(boundary_, 1); p != std::string_view::npos; p = piece.find(boundary_, p + 1)) {
      size_t q = p - 1;
      while (q > 0 && (static_cast<unsigned char>(piece[q]) & 0xC0) == 0x80 && p - q < 4) --q;
      const std::string_view before = piece.substr(q, p - q);
      if (before != boundary_) unsafe_before_.insert(before, 0);
    }
  });
  // The same rule as cut_allowed_before(), tabulated for the common characters.
  const uint32_t marker = utf8::decode_at(boundary_, 0, boundary_.size());
  cut_ok_before_bmp_.assign(0x10000, 0);
  char buf[4];
  for (uint32_t cp = 0; cp < 0x10000; ++cp) {
    if (cp == marker || bmp_ids[cp] < 0) continue;
    size_t n;
    if (cp < 0x80) {
      buf[0] = static_cast<char>(cp);
      n = 1;
    } else if (cp < 0x800) {
      buf[0] = static_cast<char>(0xC0 | (cp >> 6));
      buf[1] = static_cast<char>(0x80 | (cp & 0x3F));
      n = 2;
    } else {
      buf[0] = static_cast<char>(0xE0 | (cp >> 12));
      buf[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      buf[2] = static_cast<char>(0x80 | (cp & 0x3F));
      n = 3;
    }
    cut_ok_before_bmp_[cp] = unsafe_before_.find(std::string_view(buf, n)) < 0 ? 1 : 0;
  }
}

bool BpeModel::cut_allowed_before(std::string_view word, size_t pos) const {
  // The character in front of `pos` must be a whole valid character that never precedes
  // the marker inside a vocabulary piece.
  size_t q = pos - 1;
  while (q > 0 && (static_cast<unsigned char>(word[q]) & 0xC0) == 0x80 && pos - q < 4) --q;
  const size_t n = pos - q;
  if (utf8::char_len(word, q) != n) return false;
  if (n <= 3) return cut_ok_before_bmp_[utf8::decode_at(word, q, n)] != 0;
  const std::string_view before = word.substr(q, n);
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

// Short words (the usual case once words are cut into chunks): the same merge order as the
// heap — the lowest rank, leftmost on ties, among the current pairs — found by scanning a
// small array, which beats heap bookkeeping below a few dozen symbols.
void BpeModel::merge_small(std::vector<int32_t>& out, BpeScratch& scratch) const {
  int32_t ids[kSmallWord];
  MergeRule pair[kSmallWord];
  size_t n = scratch.symbols.size();
  for (size_t i = 0; i < n; ++i) ids[i] = scratch.symbols[i].id;
  for (size_t i = 0; i + 1 < n; ++i) merges.prefetch(ids[i], ids[i + 1]);
  for (size_t i = 0; i + 1 < n; ++i) pair[i] = merges.find(ids[i], ids[i + 1]);
  for (;;) {
    size_t best = n;
    uint32_t best_rank = UINT32_MAX;
    for (size_t i = 0; i + 1 < n; ++i) {
      const auto r = static_cast<uint32_t>(pair[i].rank);  // -1 (no rule) becomes the largest
      if (r < best_rank) {
        best_rank = r;
        best = i;
      }
    }
    if (best == n || pair[best].rank < 0) break;
    ids[best] = pair[best].result;
    for (size_t i = best + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
    for (size_t i = best; i + 2 < n; ++i) pair[i] = pair[i + 1];
    --n;
    if (best > 0) pair[best - 1] = merges.find(ids[best - 1], ids[best]);
    if (best + 1 < n) pair[best] = merges.find(ids[best], ids[best + 1]);
  }
  out.insert(out.end(), ids, ids + n);
}

void BpeModel::encode_word_uncached(std::string_view word, std::vector<int32_t>& out, BpeScratch& scratch,
                                    bool force_heap) const {
  if (word.empty()) return;
  initial_symbols(word, scratch);
  auto& syms = scratch.symbols;
  if (syms.size() >= (size_t{1} << 31)) fail("tokenizer: word of ", word.size(), " bytes is too long");
  if (syms.size() == 1) {
    out.push_back(syms[0].id);
    return;
  }
  if (syms.size() <= kSmallWord && !force_heap) {
    merge_small(out, scratch);
    return;
  }
  auto& heap = scratch.heap;
  heap.clear();
  const auto later = [](const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) { return a.key > b.key; };
  auto queue = [&](int32_t pos, int32_t left, int32_t right, MergeRule r) {
    heap.push_back({(static_cast<uint64_t>(r.rank) << 32) | static_cast<uint32_t>(pos), left, right, r.result});
  };
  // Initial pairs: prefetch every table slot first so the misses overlap.
  const auto n = static_cast<int32_t>(syms.size());
  for (int32_t i = 0; i + 1 < n; ++i) merges.prefetch(syms[i].id, syms[i + 1].id);
  for (int32_t i = 0; i + 1 < n; ++i) {
    const MergeRule r = merges.find(syms[i].id, syms[i + 1].id);
    if (r.rank >= 0) queue(i, syms[i].id, syms[i + 1].id, r);
  }
  std::make_heap(heap.begin(), heap.end(), later);
  auto push_pair = [&](int32_t pos) {
    const int32_t left = syms[pos].id, right = syms[syms[pos].next].id;
    const MergeRule r = merges.find(left, right);
    if (r.rank < 0) return;
    queue(pos, left, right, r);
    std::push_heap(heap.begin(), heap.end(), later);
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const BpeScratch::Candidate top = heap.back();
    heap.pop_back();
    const auto pos = static_cast<int32_t>(top.key & 0xFFFFFFFFu);
    auto& s = syms[pos];
    // Stale if either side changed since it was queued (merged away or merged further).
    if (s.id != top.left || s.next < 0 || syms[s.next].id != top.right) continue;
    const int32_t gone = s.next;
    s.id = top.result;
    s.next = syms[gone].next;
    syms[gone].id = -1;
    if (s.next >= 0) syms[s.next].prev = pos;
    if (s.prev >= 0 && s.next >= 0) {
      merges.prefetch(syms[s.prev].id, s.id);
      merges.prefetch(s.id, syms[s.next].id);
    }
    if (s.prev >= 0) push_pair(s.prev);
    if (s.next >= 0) push_pair(pos);
  }
  // Position 0 is never merged away (merges keep the left position), so it heads the list.
  for (int32_t i = 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

}  // namespace ringlm::tok
