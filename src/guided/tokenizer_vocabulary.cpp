// Adapter from the tokenizer module to the matcher's plain vocabulary.
#include "guided/vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace ringlm::guided {

std::shared_ptr<const Vocabulary> vocabulary_from_tokenizer(const Tokenizer& tok) {
  std::vector<std::string> bytes(size_t(tok.vocab_size()));
  for (int32_t id = 0; id < tok.vocab_size(); ++id) bytes[size_t(id)] = tok.token_bytes(id);
  std::vector<uint32_t> stops;
  for (int32_t id : tok.eos_ids()) stops.push_back(uint32_t(id));
  return std::make_shared<Vocabulary>(std::move(bytes), std::move(stops));
}

}  // namespace ringlm::guided
