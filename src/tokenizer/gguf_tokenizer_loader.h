// Builds a Tokenizer from the tokenizer metadata of a GGUF file (tokenizer.ggml.*), so a
// GGUF model needs no tokenizer.json. Supported: tokenizer.ggml.model = "gemma4" (the
// SentencePiece-style BPE with byte fallback llama.cpp's converter writes for Gemma 4).
#pragma once

#include <filesystem>

#include "io/gguf_reader.h"
#include "io/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_parts.h"

namespace ringlm {

// The parts of a gemma4 tokenizer described by `data`: every token is in the vocabulary;
// control/unknown tokens become special added tokens and user-defined and unused ones
// non-special added tokens (as in Hugging Face's tokenizer.json); merges "a b" are split at the first
// space after the first byte. The text pipeline is Gemma's: spaces -> "▁", BPE with byte
// fallback, decode "▁" -> " ". Stop ids: eos plus `<turn|>` and `<|tool_response>` when
// present (llama.cpp's end-of-generation set for Gemma 4). Throws ringlm::Error naming
// `source` for an unsupported tokenizer model or malformed merges.
TokenizerParts tokenizer_parts_from_gguf(const io::GgufTokenizerData& data, const std::string& source);

// The inverse, for writing GGUF files: a Hugging Face tokenizer directory (tokenizer.json,
// tokenizer_config.json, chat_template.jinja) as gemma4 GGUF tokenizer metadata, with
// llama.cpp's token types (special added tokens CONTROL, other added tokens USER_DEFINED,
// "<0xNN>" BYTE, the unknown token UNKNOWN). Throws ringlm::Error naming the file for a
// tokenizer that cannot be expressed (not BPE, or a merge piece containing a space).
io::GgufTokenizerData gguf_tokenizer_from_hf(const std::filesystem::path& dir);

// Reads the tokenizer metadata of an opened GGUF file and builds the Tokenizer.
Tokenizer load_gguf_tokenizer(const io::GgufFile& file);
Tokenizer load_gguf_tokenizer(const std::filesystem::path& path);

// A GGUF file (by its magic bytes) through load_gguf_tokenizer, anything else through
// Tokenizer::load (a directory with tokenizer.json, or the file itself).
Tokenizer load_tokenizer_any(const std::filesystem::path& path);

}  // namespace ringlm
