// llama-server's utility routes, in its request and response shapes, so that tools written
// for it (token counters, prompt builders, front ends that read /props) work unchanged:
//   POST /tokenize        {content, add_special=false, parse_special=true, with_pieces=false}
//                         -> {tokens: [id...]} or {tokens: [{id, piece}...]}
//   POST /detokenize      {tokens: [id...]} -> {content}
//   POST /apply-template  a chat request (messages, tools, ...) -> {prompt}
//   GET  /props           model, context, slots, default sampling, template, ringlm's notice
#include <httplib.h>

#include "server/api_error.h"
#include "server/http_server.h"
#include "server/request.h"
#include "server/response.h"
#include "util/error.h"

namespace ringlm::server {

using json = nlohmann::ordered_json;

namespace {

bool bool_field(const json& body, const char* name, bool fallback) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw ApiError(400, std::string("'") + name + "' must be a boolean", name, "invalid_value");
  return it->get<bool>();
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
std::size_t utf8_sequence(const std::string& s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// A token's piece as llama-server gives it: the text when it is whole UTF-8, else its bytes
// (a token may hold part of a character).
json piece_json(const std::string& piece) {
  if (valid_utf8(piece)) return piece;
  json bytes = json::array();
  for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  return bytes;
}

}  // namespace

void HttpServer::handle_tokenize(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req.body);
  auto content = body.find("content");
  if (content == body.end() || !content->is_string())
    throw ApiError(400, "'content' must be a string", "content", "invalid_value");
  const bool with_pieces = bool_field(body, "with_pieces", false);
  const std::vector<std::int32_t> ids = backend_.tokenize_text(content->get<std::string>(), bool_field(body, "add_special", false),
                                                               bool_field(body, "parse_special", true));
  json tokens = json::array();
  for (std::int32_t id : ids) {
    if (with_pieces) tokens.push_back({{"id", id}, {"piece", piece_json(backend_.token_text(id))}});
    else tokens.push_back(id);
  }
  res.set_content(dump_json({{"tokens", std::move(tokens)}}), "application/json");
}

void HttpServer::handle_detokenize(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req.body);
  auto tokens = body.find("tokens");
  if (tokens == body.end() || !tokens->is_array())
    throw ApiError(400, "'tokens' must be an array of token ids", "tokens", "invalid_value");
  const long long vocab = backend_.vocab_size();
  std::string text;
  for (std::size_t i = 0; i < tokens->size(); ++i) {
    const json& t = (*tokens)[i];
    const std::string at = "tokens[" + std::to_string(i) + "]";
    if (!t.is_number_integer() || t.get<long long>() < 0 || t.get<long long>() >= vocab)
      throw ApiError(400, "'" + at + "' must be a token id in [0, " + std::to_string(vocab) + ")", at, "invalid_value");
    text += backend_.token_text(static_cast<std::int32_t>(t.get<long long>()));
  }
  // Ids may end inside a character: dump_json replaces what is not UTF-8.
  res.set_content(dump_json({{"content", text}}), "application/json");
}

void HttpServer::handle_apply_template(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req.body);
  ChatRequest cr = parse_chat_request(body);
  const bool add_generation_prompt = bool_field(body, "add_generation_prompt", true);
  std::string prompt;
  try {
    prompt = backend_.render_chat_text(cr.messages, cr.tools, cr.tool_choice, add_generation_prompt, cr.enable_thinking);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::invalid_argument) throw ApiError::from(e, "chat template: ");
    throw ApiError(400, e.what(), "messages", "invalid_messages");
  }
  res.set_content(dump_json({{"prompt", prompt}}), "application/json");
}

void HttpServer::handle_props(const httplib::Request&, httplib::Response& res) {
  const Backend::ModelInfo info = backend_.model_info();
  // The defaults a request gets for what it leaves out (request.cpp, OpenAI's defaults).
  const json params = {{"temperature", 1.0}, {"top_p", 1.0},  {"top_k", 0},
                       {"min_p", 0.0},       {"n_predict", options_.max_tokens}, {"max_tokens", options_.max_tokens}};
  json body = {{"default_generation_settings", {{"n_ctx", backend_.context_length()}, {"params", params}}},
               {"total_slots", scheduler_->slots()},
               {"model_alias", backend_.model_id()},
               {"model_path", backend_.model_id()},  // the id only: the server's paths stay private
               {"chat_template", info.chat_template},
               {"bos_token", info.bos_token},
               {"eos_token", info.eos_token},
               {"build_info", "ringlm"},
               // ringlm's own: a notice for people (the demo model's text is meaningless).
               {"ringlm", {{"model_notice", options_.model_notice}, {"web_ui", options_.web_ui}}}};
  res.set_content(dump_json(body), "application/json");
}

}  // namespace ringlm::server
