// Text <-> token ids, exactly like Hugging Face `tokenizers` for BPE tokenizers (Gemma's in
// particular): added tokens matched first, then normalizer, pre-tokenizer and BPE with byte
// fallback; decoding fuses byte-fallback runs into UTF-8. A Tokenizer is immutable and cheap
// to copy (shared state), so it may be used from several threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_parts.h"

namespace ringlm {

struct EncodeOptions {
  bool add_bos = false;       // put bos_id() first (throws if the tokenizer has none)
  bool parse_special = true;  // false: special added tokens written in the text are plain text
};

class TokenizerImpl;

class Tokenizer {
 public:
  // `dir_or_json`: a directory holding tokenizer.json (+ optional tokenizer_config.json,
  // generation_config.json, config.json), or the tokenizer.json file itself (its sibling
  // config files are read when present). Throws ringlm::Error naming the file and field.
  static Tokenizer load(const std::filesystem::path& dir_or_json);
  // Builds the tables from in-memory parts (used by the GGUF loader). Throws ringlm::Error.
  static Tokenizer from_parts(TokenizerParts parts);

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options = {}) const;
  // Appends to `out` (no allocation when `out` has capacity).
  void encode_into(std::string_view text, const EncodeOptions& options, std::vector<int32_t>& out) const;
  // Throws ringlm::Error for an id outside [0, vocab_size()).
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  int32_t vocab_size() const;
  std::string_view piece(int32_t id) const;          // raw vocabulary string ("" for a hole)
  const std::string& token_bytes(int32_t id) const;  // bytes it adds to decoded text; empty for special tokens
  bool is_special(int32_t id) const;                 // control / special added token
  bool is_byte_token(int32_t id) const;              // a "<0xNN>" byte-fallback token
  std::optional<int32_t> find(std::string_view piece) const;  // added tokens first, then vocab

  int32_t bos_id() const;             // -1 when there is none
  std::vector<int32_t> eos_ids() const;  // generation_config ∪ config ∪ tokenizer_config eos
  bool add_bos_default() const;       // tokenizer_config's add_bos_token

  const TokenizerImpl& impl() const { return *impl_; }
  std::shared_ptr<const TokenizerImpl> shared_impl() const { return impl_; }

 private:
  explicit Tokenizer(std::shared_ptr<const TokenizerImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const TokenizerImpl> impl_;
};

// Incremental detokenizer for streaming output: push one id at a time and get the text it
// completes. Never returns a partial UTF-8 sequence: bytes of a character that spans several
// byte-fallback tokens are held back until the character is complete. Incomplete or invalid
// byte runs become U+FFFD (one per byte), as in Tokenizer::decode.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_special = false);
  std::string push(int32_t id);
  // Appends to `out` instead of returning a new string.
  void push_into(int32_t id, std::string& out);
  // Emits whatever is held back (as U+FFFD) and resets the decoder.
  std::string flush();

 private:
  void emit(std::string_view text, std::string& out);
  std::shared_ptr<const TokenizerImpl> impl_;
  bool skip_special_;
  std::string pending_;       // bytes of an incomplete UTF-8 character
  bool started_ = false;      // something was emitted (for leading-strip decoders)
  int leading_to_strip_ = 0;  // leading strip characters still to drop
};

}  // namespace ringlm
