// Internal state of a Tokenizer (shared, immutable after from_parts()).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/added_token_matcher.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/plain_text.h"
#include "tokenizer/text_pipeline.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_parts.h"

namespace ringlm {

class TokenizerImpl {
 public:
  explicit TokenizerImpl(TokenizerParts parts);

  void encode(std::string_view text, const EncodeOptions& options, std::vector<int32_t>& out,
              std::span<const TextRange> plain_ranges = {}) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special) const;
  void check_id(int32_t id) const;

  int32_t vocab_size = 0;
  // id -> raw piece, as views into pieces_arena (offsets has vocab_size + 1 entries).
  std::string pieces_arena;
  std::vector<uint32_t> piece_offsets;
  // id -> decoded text of the token (decoder's per-token replacements applied; for a byte
  // token, the byte itself); `token_bytes` is the same but empty for special tokens.
  std::vector<std::string> text;
  std::vector<int16_t> byte_value;  // the byte of a ByteFallback token, or -1
  std::vector<uint8_t> special;     // 1 for special added tokens
  std::string empty;

  std::vector<AddedToken> added;     // as given
  tok::StringIdMap added_by_content;
  tok::AddedTokenMatcher raw_matcher;         // added tokens with normalized == false
  tok::AddedTokenMatcher normalized_matcher;  // normalized == true, content normalized
  std::vector<std::string> normalized_content;  // per added token (matched form)
  tok::Normalizer normalizer;
  tok::PreTokenizer pre_tokenizer;
  tok::BpeModel model;

  // Decoder post-processing of the whole text.
  bool join_with_space = false;  // no decoder: pieces joined with ' '
  std::string strip_char;        // Strip decoder: character removed at the ends
  int strip_start = 0, strip_stop = 0;

  int32_t bos_id = -1;
  std::vector<int32_t> eos_ids;
  bool add_bos_default = false;

 private:
  void encode_segment(std::string_view raw, bool at_origin, std::vector<int32_t>& out) const;
  void split_added(std::string_view text, const tok::AddedTokenMatcher& matcher, bool allow_special,
                   bool at_origin, bool normalized_stage, std::vector<int32_t>& out,
                   std::span<const TextRange> plain_ranges = {}) const;
};

}  // namespace ringlm
