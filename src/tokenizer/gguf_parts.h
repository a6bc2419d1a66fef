// TokenizerParts from GGUF tokenizer metadata (the `tokenizer.ggml.*` keys), so that the
// GGUF loader only has to hand over the arrays it read. Covers SentencePiece-style BPE
// vocabularies ("gemma4", "gemma3", "gemma", "llama"): spaces are escaped to "▁", bytes
// fall back to "<0xNN>" tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_parts.h"

namespace ringlm {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class GgufTokenType : int32_t {
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6
};

struct GgufTokenizerMetadata {
  std::string model;                     // tokenizer.ggml.model
  std::vector<std::string_view> tokens;  // tokenizer.ggml.tokens (index = id)
  std::vector<int32_t> token_types;      // tokenizer.ggml.token_type (empty: all normal)
  std::vector<std::string_view> merges;  // tokenizer.ggml.merges, "left right"
  std::optional<int32_t> bos_id, eos_id, unknown_id;  // tokenizer.ggml.*_token_id
  std::vector<int32_t> extra_eos_ids;    // e.g. tokenizer.ggml.eot_token_id, eog ids
  bool add_bos = false;                  // tokenizer.ggml.add_bos_token
  bool add_space_prefix = false;         // tokenizer.ggml.add_space_prefix (Llama: true)
  // Owner of the bytes `tokens` and `merges` point into (e.g. the mapped file).
  std::shared_ptr<const void> storage;
};

// Control tokens become special added tokens, user-defined tokens non-special added tokens
// (both matched in raw text, as Hugging Face does for Gemma). Throws ringlm::Error naming
// the key at fault (unsupported model, bad merge, id out of range).
TokenizerParts parts_from_gguf(const GgufTokenizerMetadata& meta);

}  // namespace ringlm
