#include "chat/chat_template.h"

#include <fstream>
#include <sstream>

#include "util/error.h"

namespace ringlm::chat {

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read ", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::ordered_json read_json(const fs::path& path) {
  std::string text = read_file(path);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(path.string(), ": invalid JSON: ", e.what());
  }
}

// `chat_template` as stored by transformers: a string, or [{"name": ..., "template": ...}].
std::optional<std::string> pick_template(const nlohmann::ordered_json& value, const std::string& wanted,
                                         const fs::path& origin) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    for (const auto& entry : value) {
      if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") || !entry["template"].is_string())
        fail(origin.string(), ": chat_template list entries need string 'name' and 'template'");
      if (entry["name"] == wanted) return entry["template"].get<std::string>();
    }
    fail(origin.string(), ": chat_template has no template named '", wanted, "'");
  }
  if (value.is_null()) return std::nullopt;
  fail(origin.string(), ": chat_template must be a string or a list of named templates");
}

// tokenizer_config.json stores special tokens as strings or AddedToken dicts {"content": ...}.
nlohmann::ordered_json special_tokens_from(const nlohmann::ordered_json& config) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  static const char* const kNames[] = {"bos_token", "eos_token", "unk_token", "pad_token",
                                       "sep_token", "cls_token", "mask_token"};
  for (const char* name : kNames) {
    if (!config.contains(name)) continue;
    const auto& v = config[name];
    if (v.is_string()) out[name] = v;
    else if (v.is_object() && v.contains("content") && v["content"].is_string()) out[name] = v["content"];
  }
  if (config.contains("additional_special_tokens") && config["additional_special_tokens"].is_array()) {
    nlohmann::ordered_json extra = nlohmann::ordered_json::array();
    for (const auto& v : config["additional_special_tokens"]) {
      if (v.is_string()) extra.push_back(v);
      else if (v.is_object() && v.contains("content")) extra.push_back(v["content"]);
    }
    out["additional_special_tokens"] = extra;
  }
  return out;
}

}  // namespace

ChatTemplate ChatTemplate::load(const fs::path& dir, const std::string& template_name) {
  if (!fs::is_directory(dir)) fail("model directory ", dir.string(), " does not exist");
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  const fs::path config_path = dir / "tokenizer_config.json";
  if (fs::exists(config_path)) {
    config = read_json(config_path);
    if (!config.is_object()) fail(config_path.string(), ": expected a JSON object");
  }
  nlohmann::ordered_json tokens = special_tokens_from(config);

  const fs::path jinja_path = dir / "chat_template.jinja";
  if (fs::exists(jinja_path)) return ChatTemplate(read_file(jinja_path), jinja_path.string(), tokens);

  const fs::path json_path = dir / "chat_template.json";
  if (fs::exists(json_path)) {
    auto j = read_json(json_path);
    if (j.is_object() && j.contains("chat_template"))
      if (auto t = pick_template(j["chat_template"], template_name, json_path))
        return ChatTemplate(*t, json_path.string() + ":chat_template", tokens);
  }
  if (config.contains("chat_template"))
    if (auto t = pick_template(config["chat_template"], template_name, config_path))
      return ChatTemplate(*t, config_path.string() + ":chat_template", tokens);
  fail("no chat template in ", dir.string(),
       " (looked for chat_template.jinja, chat_template.json and tokenizer_config.json's chat_template)");
}

ChatTemplate::ChatTemplate(std::string_view source, std::string name, nlohmann::ordered_json special_tokens)
    : tmpl_(source, std::move(name)), special_tokens_(std::move(special_tokens)) {
  if (!special_tokens_.is_object()) fail(tmpl_.name(), ": special tokens must be a JSON object");
}

std::string ChatTemplate::render_context(nlohmann::ordered_json context) const {
  if (!context.is_object()) fail(tmpl_.name(), ": template context must be a JSON object");
  for (auto it = special_tokens_.begin(); it != special_tokens_.end(); ++it)
    if (!context.contains(it.key())) context[it.key()] = it.value();
  return tmpl_.render(context);
}

std::string ChatTemplate::render(const ChatRequest& request) const {
  if (!request.messages.is_array()) fail(tmpl_.name(), ": 'messages' must be a list");
  for (std::size_t i = 0; i < request.messages.size(); ++i) {
    const auto& m = request.messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      fail(tmpl_.name(), ": messages[", i, "] needs a string 'role'");
  }
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = request.messages;
  context["tools"] = request.tools;
  context["add_generation_prompt"] = request.add_generation_prompt;
  if (request.enable_thinking) context["enable_thinking"] = *request.enable_thinking;
  if (request.extra.is_object())
    for (auto it = request.extra.begin(); it != request.extra.end(); ++it)
      if (!context.contains(it.key())) context[it.key()] = it.value();
  return render_context(std::move(context));
}

ChatRequest parse_chat_request(const std::string& json_text, const std::string& origin) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    fail(origin, ": invalid JSON: ", e.what());
  }
  if (!j.is_object()) fail(origin, ": expected a JSON object with 'messages'");
  if (!j.contains("messages") || !j["messages"].is_array()) fail(origin, ": 'messages' must be a list");
  ChatRequest req;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    if (key == "messages") {
      req.messages = it.value();
    } else if (key == "tools") {
      if (!it.value().is_null() && !it.value().is_array()) fail(origin, ": 'tools' must be a list");
      req.tools = it.value();
    } else if (key == "add_generation_prompt") {
      if (!it.value().is_boolean()) fail(origin, ": 'add_generation_prompt' must be a boolean");
      req.add_generation_prompt = it.value().get<bool>();
    } else if (key == "enable_thinking") {
      if (!it.value().is_boolean()) fail(origin, ": 'enable_thinking' must be a boolean");
      req.enable_thinking = it.value().get<bool>();
    } else {
      req.extra[key] = it.value();
    }
  }
  return req;
}

}  // namespace ringlm::chat
