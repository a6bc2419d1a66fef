// Chat template of a model directory: turns a conversation (messages, tools) into the prompt
// text the model was trained on, exactly as Hugging Face transformers' apply_chat_template
// renders it (Jinja2 with trim_blocks and lstrip_blocks; tojson keeps key order and does not
// escape non-ASCII).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chat/jinja/template.h"

namespace ringlm::chat {

struct ChatRequest {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null: no tools (the template sees `tools` = none)
  bool add_generation_prompt = false;
  // Passed to the template only when set: templates distinguish "undefined" from false.
  std::optional<bool> enable_thinking;
  // Further template variables (e.g. preserve_thinking); they override nothing above.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

class ChatTemplate {
 public:
  // Loads the template of a model or bare tokenizer directory: chat_template.jinja, else
  // chat_template.json's or tokenizer_config.json's `chat_template` (a string, or a list
  // of {name, template} from which `template_name` - default "default" - is taken). Special
  // token strings (bos_token, eos_token, ...) come from tokenizer_config.json.
  static ChatTemplate load(const std::filesystem::path& dir, const std::string& template_name = "default");

  // A template from source text; `special_tokens` is a JSON object of extra variables
  // such as {"bos_token": "<bos>"}.
  ChatTemplate(std::string_view source, std::string name,
               nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object());

  // The prompt text for `request`. Throws ringlm::Error for template errors (with line and
  // column) and for malformed requests.
  std::string render(const ChatRequest& request) const;

  // Renders with an arbitrary variable set; the special tokens are added unless present.
  std::string render_context(nlohmann::ordered_json context) const;

  const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }
  const std::string& name() const { return tmpl_.name(); }

 private:
  jinja::Template tmpl_;
  nlohmann::ordered_json special_tokens_;
};

// Parses a request file body {"messages": [...], "tools": [...], ...}; throws ringlm::Error
// naming `origin` on bad JSON or a missing/ill-typed field.
ChatRequest parse_chat_request(const std::string& json_text, const std::string& origin);

}  // namespace ringlm::chat
