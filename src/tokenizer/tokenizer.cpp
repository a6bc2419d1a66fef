#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/tokenizer_impl.h"
#include "util/utf8.h"
#include "util/error.h"

namespace ringlm {
namespace {

// Ids above this are rejected: they would make the id tables absurdly large.
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

// Per-thread buffers so that encoding does not allocate once they have grown.
struct EncodeScratch {
  std::string normalized, tmp;
  tok::PreTokenizerScratch pre;
  tok::BpeScratch bpe;
};
EncodeScratch& encode_scratch() {
  thread_local EncodeScratch scratch;
  return scratch;
}

// "<0xNN>" -> NN, or -1.
int parse_byte_piece(std::string_view s) {
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return -1;
  int v = 0;
  for (char c : s.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else return -1;
  }
  return v;
}

std::string replace_literal(std::string_view in, std::string_view pattern, std::string_view with) {
  std::string out;
  if (pattern.empty()) return std::string(in);
  size_t pos = 0;
  for (;;) {
    const size_t hit = in.find(pattern, pos);
    if (hit == std::string_view::npos) break;
    out.append(in.substr(pos, hit - pos));
    out.append(with);
    pos = hit + pattern.size();
  }
  out.append(in.substr(pos));
  return out;
}

bool is_word_char(uint32_t c) {
  // Approximates Rust's char::is_alphanumeric() || '_' (used by single_word): ASCII letters,
  // digits and '_', and every non-ASCII character that is not whitespace.
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return !utf8::is_white_space(c);
}

// Code point of the last valid character of s (or 0 if none / invalid).
uint32_t last_char(std::string_view s) {
  size_t i = s.size();
  while (i > 0) {
    --i;
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) break;
  }
  const size_t n = s.empty() ? 0 : utf8::char_len(s, i);
  return n ? utf8::decode_at(s, i, n) : 0;
}

uint32_t first_char(std::string_view s) {
  const size_t n = s.empty() ? 0 : utf8::char_len(s, 0);
  return n ? utf8::decode_at(s, 0, n) : 0;
}

// Start of the whitespace run that ends at s.size().
size_t trailing_space_start(std::string_view s) {
  size_t run = s.size();
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8::char_len(s, i);
    const bool space = n != 0 && utf8::is_white_space(utf8::decode_at(s, i, n));
    if (n == 0) n = 1;
    if (!space) run = s.size();
    else if (run == s.size()) run = i;
    i += n;
  }
  return run;
}

size_t leading_space_end(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = utf8::char_len(s, i);
    if (n == 0 || !utf8::is_white_space(utf8::decode_at(s, i, n))) break;
    i += n;
  }
  return i;
}

// The merge rules into the model, ranked by position. The pieces are resolved in batches so
// the hash lookups can overlap.
void insert_merges(tok::BpeModel& model, const std::vector<std::pair<std::string_view, std::string_view>>& merges) {
  model.merges.reserve(merges.size());
  constexpr size_t kBatch = 32;
  std::string joined_buf;
  std::vector<std::string_view> keys(3 * kBatch);
  std::vector<int32_t> ids(3 * kBatch);
  size_t joined_offsets[kBatch + 1];
  for (size_t base = 0; base < merges.size(); base += kBatch) {
    const size_t m = std::min(kBatch, merges.size() - base);
    joined_buf.clear();
    for (size_t k = 0; k < m; ++k) {
      joined_offsets[k] = joined_buf.size();
      joined_buf.append(merges[base + k].first);
      joined_buf.append(merges[base + k].second);
    }
    joined_offsets[m] = joined_buf.size();
    for (size_t k = 0; k < m; ++k) {
      keys[3 * k] = merges[base + k].first;
      keys[3 * k + 1] = merges[base + k].second;
      keys[3 * k + 2] = std::string_view(joined_buf).substr(joined_offsets[k], joined_offsets[k + 1] - joined_offsets[k]);
    }
    model.vocab.find_many(keys.data(), ids.data(), 3 * m);
    for (size_t k = 0; k < m; ++k) model.merges.prefetch(ids[3 * k], ids[3 * k + 1]);
    for (size_t k = 0; k < m; ++k) {
      const size_t rank = base + k;
      if (ids[3 * k] < 0) fail("tokenizer: merges[", rank, "]: '", keys[3 * k], "' is not in the vocabulary");
      if (ids[3 * k + 1] < 0) fail("tokenizer: merges[", rank, "]: '", keys[3 * k + 1], "' is not in the vocabulary");
      if (ids[3 * k + 2] < 0) {
        fail("tokenizer: merges[", rank, "]: the merged piece '", keys[3 * k + 2], "' is not in the vocabulary");
      }
      model.merges.insert(ids[3 * k], ids[3 * k + 1], tok::MergeRule{static_cast<int32_t>(rank), ids[3 * k + 2]});
    }
  }
}

// The decoder steps turned into one byte string per token (text) and the byte of each
// ByteFallback token (byte_value), so decoding is a table lookup per id.
void build_decoder_table(const TokenizerParts& parts, const std::vector<std::string_view>& piece_of,
                         TokenizerImpl& impl) {
  std::vector<std::pair<std::string, std::string>> replacements;  // per token, in order
  bool byte_fallback_decoder = false;
  impl.join_with_space = !parts.has_decoder;
  for (const DecoderStep& step : parts.decoder) {
    switch (step.kind) {
      case DecoderStep::Kind::kReplace: replacements.emplace_back(step.pattern, step.content); break;
      case DecoderStep::Kind::kByteFallback: byte_fallback_decoder = true; break;
      case DecoderStep::Kind::kFuse: break;
      case DecoderStep::Kind::kStrip:
        impl.strip_char = step.content;
        impl.strip_start = step.start;
        impl.strip_stop = step.stop;
        break;
      case DecoderStep::Kind::kMetaspace:
        replacements.emplace_back(step.pattern, " ");
        if (step.strip_first_space) {
          impl.strip_char.assign(1, ' ');  // (not = " ": GCC 12 warns -Wrestrict wrongly)
          impl.strip_start = 1;
        }
        break;
    }
  }
  impl.text.resize(impl.vocab_size);
  impl.byte_value.assign(impl.vocab_size, -1);
  for (int32_t id = 0; id < impl.vocab_size; ++id) {
    std::string t(piece_of[id]);
    for (const auto& [from, to] : replacements)
      if (t.find(from) != std::string::npos) t = replace_literal(t, from, to);
    const int b = byte_fallback_decoder ? parse_byte_piece(t) : -1;
    if (b >= 0) {
      impl.byte_value[id] = static_cast<int16_t>(b);
      t.assign(1, static_cast<char>(b));
    }
    impl.text[id] = std::move(t);
  }
}

}  // namespace

TokenizerImpl::TokenizerImpl(TokenizerParts parts) {
  // ---- id space ----
  int64_t max_id = -1;
  for (size_t i = 0; i < parts.vocab.size(); ++i) {
    const int32_t id = parts.vocab[i].second;
    if (id < 0 || id > kMaxTokenId) fail("tokenizer: vocab entry '", parts.vocab[i].first, "' has invalid id ", id);
    max_id = std::max<int64_t>(max_id, id);
  }
  for (const AddedToken& t : parts.added_tokens) {
    if (t.id < 0 || t.id > kMaxTokenId) fail("tokenizer: added token '", t.content, "' has invalid id ", t.id);
    if (t.content.empty()) fail("tokenizer: added token with id ", t.id, " has empty content");
    max_id = std::max<int64_t>(max_id, t.id);
  }
  if (max_id < 0) fail("tokenizer: the vocabulary is empty");
  vocab_size = static_cast<int32_t>(max_id + 1);

  // ---- pieces (added token content overrides the model's piece, as id_to_token does) ----
  std::vector<std::string_view> piece_of(vocab_size);
  size_t total = 0;
  for (const auto& [p, id] : parts.vocab) {
    piece_of[id] = p;
    total += p.size();
  }
  for (const AddedToken& t : parts.added_tokens) piece_of[t.id] = t.content;
  pieces_arena.reserve(total + 64);
  piece_offsets.resize(vocab_size + 1);
  for (int32_t id = 0; id < vocab_size; ++id) {
    piece_offsets[id] = static_cast<uint32_t>(pieces_arena.size());
    pieces_arena.append(piece_of[id]);
  }
  piece_offsets[vocab_size] = static_cast<uint32_t>(pieces_arena.size());

  // ---- BPE model ----
  model.vocab.reserve(parts.vocab.size(), total);
  model.vocab.insert_many(parts.vocab.data(), parts.vocab.size());
  for (int b = 0; b < 256; ++b) {
    static const char* hex = "0123456789ABCDEF";
    const char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    model.byte_ids[b] = model.vocab.find(std::string_view(name, 6));
  }
  model.byte_fallback = parts.byte_fallback;
  model.fuse_unk = parts.fuse_unk;
  model.ignore_merges = parts.ignore_merges;
  // An unk_token missing from the vocabulary only matters if it is ever needed.
  if (!parts.unk_token.empty()) model.unk_id = model.vocab.find(parts.unk_token);
  insert_merges(model, parts.merges);
  std::vector<std::pair<std::string_view, std::string_view>>().swap(parts.merges);

  // ---- text pipeline ----
  normalizer = tok::Normalizer(parts.normalizer);
  pre_tokenizer = tok::PreTokenizer(parts.pre_tokenizer);
  // The model may cut words before the space marker: the normalizer's replacement for " "
  // (Gemma: "▁"), else Metaspace's, else the space itself.
  std::string space_marker = " ";
  for (const NormalizerStep& s : parts.normalizer)
    if (s.kind == NormalizerStep::Kind::kReplace && s.pattern == " ") space_marker = s.content;
  for (const PreTokenizerStep& s : parts.pre_tokenizer)
    if (s.kind == PreTokenizerStep::Kind::kMetaspace) space_marker = s.pattern;
  model.finish(space_marker);

  // ---- added tokens ----
  special.assign(vocab_size, 0);
  added = std::move(parts.added_tokens);
  std::vector<tok::AddedTokenMatcher::Entry> raw_entries, norm_entries;
  normalized_content.resize(added.size());
  std::string norm_tmp;
  for (size_t i = 0; i < added.size(); ++i) {
    const AddedToken& t = added[i];
    if (t.special) special[t.id] = 1;
    added_by_content.insert(t.content, t.id);
    if (t.normalized && !normalizer.empty()) {
      normalizer.apply(t.content, normalized_content[i], norm_tmp);
      norm_entries.push_back({normalized_content[i], static_cast<int32_t>(i), t.special});
    } else {
      normalized_content[i] = t.content;
      raw_entries.push_back({t.content, static_cast<int32_t>(i), t.special});
    }
  }
  raw_matcher = tok::AddedTokenMatcher(raw_entries);
  normalized_matcher = tok::AddedTokenMatcher(norm_entries);

  // ---- decoder ----
  build_decoder_table(parts, piece_of, *this);

  bos_id = parts.bos_id;
  if (bos_id >= vocab_size) fail("tokenizer: bos id ", bos_id, " is outside the vocabulary");
  for (int32_t e : parts.eos_ids) {
    if (e < 0 || e >= vocab_size) fail("tokenizer: eos id ", e, " is outside the vocabulary");
    if (std::find(eos_ids.begin(), eos_ids.end(), e) == eos_ids.end()) eos_ids.push_back(e);
  }
  add_bos_default = parts.add_bos_default;
}

void TokenizerImpl::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_size) fail("token id ", id, " is outside the vocabulary [0, ", vocab_size, ")");
}

void TokenizerImpl::encode(std::string_view input, const EncodeOptions& options, std::vector<int32_t>& out,
                           std::span<const TextRange> plain_ranges) const {
  if (options.add_bos) {
    if (bos_id < 0) fail("tokenizer: add_bos requested but the tokenizer has no bos token");
    out.push_back(bos_id);
  }
  split_added(input, raw_matcher, options.parse_special, true, false, out,
              options.parse_special ? plain_ranges : std::span<const TextRange>());
}

// Cuts `s` at added-token matches; the text between them goes on to the next stage (the
// normalizer for raw text, the pre-tokenizer and model for normalized text).
void TokenizerImpl::split_added(std::string_view s, const tok::AddedTokenMatcher& matcher, bool allow_special,
                                bool at_origin, bool normalized_stage, std::vector<int32_t>& out,
                                std::span<const TextRange> plain_ranges) const {
  auto emit_text = [&](size_t begin, size_t end) {
    if (end <= begin) return;
    const std::string_view piece = s.substr(begin, end - begin);
    const bool origin = at_origin && begin == 0;
    if (!normalized_stage) {
      encode_segment(piece, origin, out);
      return;
    }
    EncodeScratch& scratch = encode_scratch();
    pre_tokenizer.apply(piece, origin, scratch.pre);
    for (std::string_view word : scratch.pre.words) model.encode_word(word, out, scratch.bpe);
  };
  size_t prev_end = 0;
  size_t from = 0;
  if (!matcher.empty()) {
    for (;;) {
      const auto m = matcher.find(s, from, allow_special);
      if (m.index < 0) break;
      const AddedToken& t = added[m.index];
      size_t begin = m.start, end = m.start + m.length;
      if (t.special && !plain_ranges.empty()) {
        while (!plain_ranges.empty() && plain_ranges.front().end <= begin) plain_ranges = plain_ranges.subspan(1);
        if (!plain_ranges.empty() && plain_ranges.front().begin <= begin) {
          from = begin + 1;  // written in plain text: not a match, look again one byte on
          continue;
        }
      }
      from = end;
      if (t.single_word) {
        const bool left_ok = begin == 0 || !is_word_char(last_char(s.substr(0, begin)));
        const bool right_ok = end == s.size() || !is_word_char(first_char(s.substr(end)));
        if (!left_ok || !right_ok) continue;  // not a match; the text stays ordinary text
      }
      if (t.lstrip) begin = prev_end + trailing_space_start(s.substr(prev_end, begin - prev_end));
      if (t.rstrip) end += leading_space_end(s.substr(end));
      emit_text(prev_end, begin);
      out.push_back(t.id);
      prev_end = end;
      from = end;
    }
  }
  emit_text(prev_end, s.size());
}

void TokenizerImpl::encode_segment(std::string_view raw, bool at_origin, std::vector<int32_t>& out) const {
  EncodeScratch& scratch = encode_scratch();
  std::string_view normalized = raw;
  if (!normalizer.empty()) {
    normalizer.apply(raw, scratch.normalized, scratch.tmp);
    normalized = scratch.normalized;
  }
  if (!normalized_matcher.empty()) {
    // The pieces are views into scratch.normalized, which the next stage does not touch.
    split_added(normalized, normalized_matcher, true, at_origin, true, out);
    return;
  }
  pre_tokenizer.apply(normalized, at_origin, scratch.pre);
  for (std::string_view word : scratch.pre.words) model.encode_word(word, out, scratch.bpe);
}

std::string TokenizerImpl::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  if (join_with_space) {
    bool first = true;
    for (int32_t id : ids) {
      check_id(id);
      if (skip_special && special[id]) continue;
      if (!first) out.push_back(' ');
      out.append(text[id]);
      first = false;
    }
  } else {
    // Byte-fallback runs are fused; a run that is not valid UTF-8 as a whole becomes one
    // U+FFFD per byte (Hugging Face's ByteFallback decoder).
    std::string run;
    auto flush_run = [&] {
      if (run.empty()) return;
      if (utf8::is_valid(run)) {
        out.append(run);
      } else {
        for (size_t k = 0; k < run.size(); ++k) out.append(utf8::kReplacementChar);
      }
      run.clear();
    };
    for (int32_t id : ids) {
      check_id(id);
      if (skip_special && special[id]) continue;
      if (byte_value[id] >= 0) {
        run.push_back(static_cast<char>(byte_value[id]));
      } else {
        flush_run();
        out.append(text[id]);
      }
    }
    flush_run();
  }
  if (!strip_char.empty()) {
    for (int k = 0; k < strip_start && out.compare(0, strip_char.size(), strip_char) == 0; ++k)
      out.erase(0, strip_char.size());
    for (int k = 0; k < strip_stop && out.size() >= strip_char.size() &&
                    out.compare(out.size() - strip_char.size(), strip_char.size(), strip_char) == 0;
         ++k)
      out.resize(out.size() - strip_char.size());
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Tokenizer (public face)

Tokenizer Tokenizer::from_parts(TokenizerParts parts) {
  return Tokenizer(std::make_shared<const TokenizerImpl>(std::move(parts)));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  impl_->encode(text, options, out);
  return out;
}

void Tokenizer::encode_into(std::string_view text, const EncodeOptions& options, std::vector<int32_t>& out) const {
  impl_->encode(text, options, out);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  return impl_->decode(ids, skip_special);
}

int32_t Tokenizer::vocab_size() const { return impl_->vocab_size; }

std::string_view Tokenizer::piece(int32_t id) const {
  impl_->check_id(id);
  return std::string_view(impl_->pieces_arena).substr(impl_->piece_offsets[id],
                                                      impl_->piece_offsets[id + 1] - impl_->piece_offsets[id]);
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
  impl_->check_id(id);
  return impl_->special[id] ? impl_->empty : impl_->text[id];
}

bool Tokenizer::is_special(int32_t id) const {
  impl_->check_id(id);
  return impl_->special[id] != 0;
}

bool Tokenizer::is_byte_token(int32_t id) const {
  impl_->check_id(id);
  return impl_->byte_value[id] >= 0;
}

std::optional<int32_t> Tokenizer::find(std::string_view piece) const {
  int32_t id = impl_->added_by_content.find(piece);
  if (id < 0) id = impl_->model.vocab.find(piece);
  if (id < 0) return std::nullopt;
  return id;
}

int32_t Tokenizer::bos_id() const { return impl_->bos_id; }
std::vector<int32_t> Tokenizer::eos_ids() const { return impl_->eos_ids; }
bool Tokenizer::add_bos_default() const { return impl_->add_bos_default; }

}  // namespace ringlm

namespace ringlm {

void encode_with_plain_ranges(const Tokenizer& tokenizer, std::string_view text, std::span<const TextRange> plain,
                              std::vector<std::int32_t>& out) {
  tokenizer.impl().encode(text, EncodeOptions{}, out, plain);
}

TextRange find_special_token(const Tokenizer& tokenizer, std::string_view text, std::size_t from) {
  const TokenizerImpl& impl = tokenizer.impl();
  while (from < text.size()) {
    const auto m = impl.raw_matcher.find(text, from, true);
    if (m.index < 0) break;
    if (impl.added[m.index].special) return {m.start, m.start + m.length};
    from = m.start + 1;
  }
  return {std::string_view::npos, std::string_view::npos};
}

}  // namespace ringlm
