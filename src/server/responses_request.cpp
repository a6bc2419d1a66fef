#include "server/responses_request.h"

#include <string>

#include "server/api_error.h"

namespace ringlm::server {

using json = nlohmann::ordered_json;

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param, "invalid_value");
}

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string string_field(const json& obj, const char* name, const std::string& at) {
  const json* v = field(obj, name);
  if (!v || !v->is_string()) bad(at + "." + name, "'" + at + "." + name + "' must be a string");
  return v->get<std::string>();
}

// A Responses content part as a chat content part.
json chat_part(const json& part, const std::string& at) {
  if (!part.is_object()) bad(at, "'" + at + "' must be an object");
  const std::string type = string_field(part, "type", at);
  if (type == "input_text" || type == "output_text" || type == "text") return {{"type", "text"}, {"text", string_field(part, "text", at)}};
  if (type == "refusal") return {{"type", "text"}, {"text", string_field(part, "refusal", at)}};
  if (type == "input_image") {
    if (field(part, "file_id")) bad(at + ".file_id", "'" + at + ".file_id': this server keeps no files; send the image as a data: URL");
    json image = {{"url", string_field(part, "image_url", at)}};
    if (const json* d = field(part, "detail")) image["detail"] = *d;
    return {{"type", "image_url"}, {"image_url", std::move(image)}};
  }
  if (type == "input_audio") return {{"type", "input_audio"}, {"input_audio", part.value("input_audio", json())}};
  bad(at + ".type", "'" + at + ".type' " + type + " is not supported (input_text, input_image, input_audio, output_text)");
}

// Message content: a string, or an array of parts.
json chat_content(const json& content, const std::string& at) {
  if (content.is_string()) return content;
  if (!content.is_array()) bad(at, "'" + at + "' must be a string or an array of content parts");
  json parts = json::array();
  for (std::size_t k = 0; k < content.size(); ++k) parts.push_back(chat_part(content[k], at + "[" + std::to_string(k) + "]"));
  return parts;
}

// A tool's output as the tool message's text (a string, or text parts joined).
std::string output_text(const json& output, const std::string& at) {
  if (output.is_string()) return output.get<std::string>();
  if (!output.is_array()) bad(at, "'" + at + "' must be a string or an array of text parts");
  std::string text;
  for (std::size_t k = 0; k < output.size(); ++k) {
    const std::string pat = at + "[" + std::to_string(k) + "]";
    if (!output[k].is_object() || output[k].value("type", "") != "input_text")
      bad(pat, "'" + pat + "' must be an input_text part");
    text += string_field(output[k], "text", pat);
  }
  return text;
}

// `input` (a string, or an array of items) as chat messages appended to `messages`.
void translate_input(const json& input, json& messages) {
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    return;
  }
  if (!input.is_array()) bad("input", "'input' must be a string or an array of input items");
  json names = json::object();  // call_id -> function name, for the tool messages
  for (std::size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    const std::string at = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) bad(at, "'" + at + "' must be an object");
    const std::string type = item.contains("type") && item["type"].is_string() ? item["type"].get<std::string>() : "message";
    if (type == "message") {
      const std::string role = string_field(item, "role", at);
      if (!item.contains("content")) bad(at + ".content", "'" + at + ".content' is required");
      messages.push_back({{"role", role}, {"content", chat_content(item["content"], at + ".content")}});
    } else if (type == "function_call") {
      const std::string call_id = string_field(item, "call_id", at), name = string_field(item, "name", at);
      const std::string arguments = string_field(item, "arguments", at);
      names[call_id] = name;
      json call = {{"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
      // Calls made together (and a message just before them) are one assistant turn.
      if (!messages.empty() && messages.back()["role"] == "assistant" && !messages.back().contains("tool_call_id")) {
        json& last = messages.back();
        if (!last.contains("tool_calls")) last["tool_calls"] = json::array();
        last["tool_calls"].push_back(std::move(call));
      } else {
        messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({std::move(call)})}});
      }
    } else if (type == "function_call_output") {
      const std::string call_id = string_field(item, "call_id", at);
      if (!item.contains("output")) bad(at + ".output", "'" + at + ".output' is required");
      json msg = {{"role", "tool"}, {"tool_call_id", call_id}, {"content", output_text(item["output"], at + ".output")}};
      if (names.contains(call_id)) msg["name"] = names[call_id];
      messages.push_back(std::move(msg));
    } else if (type == "reasoning") {
      continue;  // an earlier reply's thought: the template drops past thoughts anyway
    } else if (type == "item_reference") {
      bad(at + ".type", "'" + at + ".type' item_reference: this server is stateless; send the item itself");
    } else {
      bad(at + ".type", "'" + at + ".type' " + type +
                            " is not supported (message, function_call, function_call_output, reasoning)");
    }
  }
}

// Flat Responses function tools -> chat tools.
json translate_tools(const json& tools) {
  if (!tools.is_array()) bad("tools", "'tools' must be an array");
  json out = json::array();
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string at = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) bad(at, "'" + at + "' must be an object");
    const std::string type = string_field(t, "type", at);
    if (type != "function")
      bad(at + ".type", "'" + at + ".type' " + type + ": only function tools are supported (this server runs no hosted tools)");
    json fn = {{"name", string_field(t, "name", at)}};
    if (const json* d = field(t, "description")) fn["description"] = *d;
    if (const json* p = field(t, "parameters")) fn["parameters"] = *p;
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

json translate_tool_choice(const json& choice) {
  if (choice.is_string()) return choice;
  if (choice.is_object() && choice.value("type", "") == "function" && choice.contains("name") && choice["name"].is_string())
    return {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
  bad("tool_choice", "'tool_choice' must be auto, none, required or {\"type\":\"function\",\"name\":...}");
}

// text.format -> response_format.
json translate_text_format(const json& text) {
  if (!text.is_object()) bad("text", "'text' must be an object");
  const json* format = field(text, "format");
  if (!format) return nullptr;
  if (!format->is_object()) bad("text.format", "'text.format' must be an object");
  const std::string type = string_field(*format, "type", "text.format");
  if (type == "text") return nullptr;
  if (type == "json_object") return {{"type", "json_object"}};
  if (type != "json_schema") bad("text.format.type", "'text.format.type' must be text, json_object or json_schema");
  json js = {{"name", format->value("name", std::string("response"))}};
  if (const json* s = field(*format, "schema")) js["schema"] = *s;
  else bad("text.format.schema", "'text.format.schema' is required");
  if (const json* s = field(*format, "strict")) js["strict"] = *s;
  return {{"type", "json_schema"}, {"json_schema", std::move(js)}};
}

}  // namespace

ResponsesRequest translate_responses_request(const json& body) {
  if (field(body, "previous_response_id"))
    bad("previous_response_id", "'previous_response_id': this server is stateless and keeps no responses; "
                                "send the whole conversation in 'input'");
  if (const json* b = field(body, "background"); b && *b == true)
    bad("background", "'background': responses are not run in the background here");
  if (field(body, "conversation"))
    bad("conversation", "'conversation': this server is stateless; send the whole conversation in 'input'");
  ResponsesRequest r;
  json messages = json::array();
  if (const json* ins = field(body, "instructions")) {
    if (!ins->is_string()) bad("instructions", "'instructions' must be a string");
    messages.push_back({{"role", "system"}, {"content", *ins}});
  }
  const json* input = field(body, "input");
  if (!input) bad("input", "'input' is required");
  translate_input(*input, messages);
  json& chat = r.chat_body;
  chat = {{"messages", std::move(messages)}};
  // Fields with the same name and meaning in both APIs.
  for (const char* name : {"model", "temperature", "top_p", "top_k", "min_p", "seed", "stream", "parallel_tool_calls",
                           "stop", "enable_thinking", "chat_template_kwargs", "thinking_budget", "schema_mode"}) {
    if (const json* v = field(body, name)) chat[name] = *v;
  }
  if (const json* m = field(body, "max_output_tokens")) chat["max_tokens"] = *m;
  if (const json* t = field(body, "tools")) chat["tools"] = translate_tools(*t);
  if (const json* c = field(body, "tool_choice")) chat["tool_choice"] = translate_tool_choice(*c);
  if (const json* t = field(body, "text")) {
    if (json rf = translate_text_format(*t); !rf.is_null()) chat["response_format"] = std::move(rf);
  }
  if (const json* reasoning = field(body, "reasoning")) {
    if (!reasoning->is_object()) bad("reasoning", "'reasoning' must be an object");
    if (const json* e = field(*reasoning, "effort")) chat["reasoning_effort"] = *e;
  }

  auto echo_or = [&](const char* name, json fallback) {
    const json* v = field(body, name);
    return v ? *v : fallback;
  };
  r.echo = {{"instructions", echo_or("instructions", nullptr)},
            {"max_output_tokens", echo_or("max_output_tokens", nullptr)},
            {"metadata", echo_or("metadata", json::object())},
            {"parallel_tool_calls", echo_or("parallel_tool_calls", true)},
            {"previous_response_id", nullptr},
            {"reasoning", echo_or("reasoning", json{{"effort", nullptr}, {"summary", nullptr}})},
            {"store", false},  // whatever was asked: nothing is kept
            {"temperature", echo_or("temperature", 1.0)},
            {"text", echo_or("text", json{{"format", {{"type", "text"}}}})},
            {"tool_choice", echo_or("tool_choice", "auto")},
            {"tools", echo_or("tools", json::array())},
            {"top_p", echo_or("top_p", 1.0)},
            {"truncation", "disabled"}};
  return r;
}

}  // namespace ringlm::server
