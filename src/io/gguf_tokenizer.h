// The tokenizer as GGUF metadata stores it (`tokenizer.ggml.*`, `tokenizer.chat_template`),
// read into plain vectors so the tokenizer module can build its Tokenizer without knowing
// GGUF, and written back by the GGUF writer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ringlm::io {

class GgufFile;
class GgufWriter;

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class GgufTokenType : std::int32_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

struct GgufTokenizerData {
  std::string model;                       // tokenizer.ggml.model: "gemma4", "llama", "gpt2", ...
  std::string pre;                         // tokenizer.ggml.pre ("" if absent)
  std::vector<std::string> tokens;         // id -> piece
  std::vector<float> scores;               // empty if absent, else one per token
  std::vector<std::int32_t> token_types;   // empty if absent, else one per token (GgufTokenType)
  std::vector<std::string> merges;         // "left right", highest priority first
  std::optional<std::int32_t> bos_id, eos_id, unk_id, pad_id;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
  std::string chat_template;               // "" if absent
};

// Reads and validates the tokenizer metadata (lengths agree, ids in range); throws
// ringlm::Error naming the file and key.
GgufTokenizerData gguf_tokenizer_data(const GgufFile& file);

// Writes the same keys (those with values).
void gguf_write_tokenizer(GgufWriter& w, const GgufTokenizerData& data);

}  // namespace ringlm::io
