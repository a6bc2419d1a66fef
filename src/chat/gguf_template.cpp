#include "chat/gguf_template.h"

#include "io/gguf_reader.h"
#include "io/gguf_tokenizer.h"
#include "tokenizer/gguf_tokenizer_loader.h"
#include "util/error.h"

namespace ringlm::chat {

std::unique_ptr<ChatTemplate> gguf_chat_template(const std::filesystem::path& gguf, const Tokenizer& tokenizer) {
  io::GgufFile file(gguf);
  const auto data = io::gguf_tokenizer_data(file);
  if (data.chat_template.empty()) return nullptr;
  nlohmann::ordered_json specials = nlohmann::ordered_json::object();
  if (tokenizer.bos_id() >= 0) specials["bos_token"] = std::string(tokenizer.piece(tokenizer.bos_id()));
  if (data.eos_id) specials["eos_token"] = std::string(tokenizer.piece(*data.eos_id));
  return std::make_unique<ChatTemplate>(data.chat_template, gguf.filename().string(), specials);
}

ChatTemplate load_chat_template_any(const std::filesystem::path& path, const Tokenizer* tokenizer) {
  if (!(std::filesystem::is_regular_file(path) && io::is_gguf_file(path))) return ChatTemplate::load(path);
  std::unique_ptr<ChatTemplate> t;
  if (tokenizer) {
    t = gguf_chat_template(path, *tokenizer);
  } else {
    t = gguf_chat_template(path, load_tokenizer_any(path));
  }
  if (!t) fail(path.string(), ": the GGUF file has no tokenizer.chat_template");
  return std::move(*t);
}

}  // namespace ringlm::chat
