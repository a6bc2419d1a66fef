// Adapter from the tokenizer module to the matcher's plain vocabulary.
#include "guided/reply_grammar.h"
#include "guided/vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace ringlm::guided {

std::shared_ptr<const Vocabulary> vocabulary_from_tokenizer(const Tokenizer& tok) {
  std::vector<uint32_t> stops;
  for (int32_t id : tok.eos_ids()) stops.push_back(uint32_t(id));
  return vocabulary_from_tokenizer(tok, std::move(stops));
}

std::shared_ptr<const Vocabulary> vocabulary_from_tokenizer(const Tokenizer& tok, std::vector<uint32_t> stops) {
  std::vector<std::string> bytes(size_t(tok.vocab_size()));
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    const std::string& b = tok.token_bytes(id);
    // Bytes 0xF8-0xFF never occur in UTF-8 (only byte-fallback tokens produce them) and no
    // grammar allows them: they are reserved for the reply markers below.
    if (b.size() == 1 && uint8_t(b[0]) >= marker::kFirst) continue;
    bytes[size_t(id)] = b;
  }
  // The special tokens a reply grammar (reply_grammar.h) places, one marker byte each.
  const std::pair<const char*, uint8_t> markers[] = {{"<|tool_call>", marker::kToolCallOpen},
                                                     {"<tool_call|>", marker::kToolCallClose},
                                                     {"<|channel>", marker::kChannelOpen},
                                                     {"<channel|>", marker::kChannelClose}};
  for (auto [piece, byte] : markers) {
    if (auto id = tok.find(piece); id && tok.is_special(*id)) bytes[size_t(*id)] = std::string(1, char(byte));
  }
  return std::make_shared<Vocabulary>(std::move(bytes), std::move(stops));
}

}  // namespace ringlm::guided
