// The chat template a GGUF file carries (tokenizer.chat_template), with the bos/eos strings
// of its tokenizer, so that every command that takes a model directory also takes a GGUF file.
#pragma once

#include <filesystem>
#include <memory>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ringlm::chat {

// nullptr when the file has no chat template. Throws ringlm::Error for a malformed file.
std::unique_ptr<ChatTemplate> gguf_chat_template(const std::filesystem::path& gguf, const Tokenizer& tokenizer);

// The template of a model directory (ChatTemplate::load) or GGUF file; throws ringlm::Error
// naming the path when there is none.
ChatTemplate load_chat_template_any(const std::filesystem::path& path, const Tokenizer* tokenizer = nullptr);

}  // namespace ringlm::chat
