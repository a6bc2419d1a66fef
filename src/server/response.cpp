#include "server/response.h"

#include <random>

namespace ringlm::server {

using json = nlohmann::ordered_json;  // keys keep the order they were given in (schemas, tool arguments)

std::string new_id(const char* prefix) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof kAlphabet - 1)];
  return id;
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json usage_json(const engine::GenerationResult& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_prompt_tokens}}}};
}

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

}  // namespace

json chat_logprob_entry(Backend& backend, const engine::TokenEvent& ev) {
  const std::string tok = backend.token_text(ev.id);
  json top = json::array();
  for (const auto& t : ev.top) {
    const std::string s = backend.token_text(t.id);
    top.push_back({{"token", s}, {"logprob", t.logprob}, {"bytes", bytes_of(s)}});
  }
  return {{"token", tok}, {"logprob", ev.logprob}, {"bytes", bytes_of(tok)}, {"top_logprobs", std::move(top)}};
}

json completion_logprobs(Backend& backend, const std::vector<engine::TokenEvent>& events, std::size_t text_offset,
                         bool with_top) {
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const auto& ev : events) {
    const std::string tok = backend.token_text(ev.id);
    tokens.push_back(tok);
    lps.push_back(ev.logprob);
    offsets.push_back(text_offset);
    text_offset += ev.text.size();
    if (with_top) {
      json m = json::object();
      for (const auto& t : ev.top) m[backend.token_text(t.id)] = t.logprob;
      tops.push_back(std::move(m));
    }
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(lps)},
          {"top_logprobs", with_top ? std::move(tops) : json(nullptr)},
          {"text_offset", std::move(offsets)}};
}

json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
  json out = json::array();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    json c = {{"id", new_id("call_")},
              {"type", "function"},
              {"function", {{"name", calls[i].name}, {"arguments", dump_json(calls[i].arguments)}}}};
    if (with_index) c["index"] = i;
    out.push_back(std::move(c));
  }
  return out;
}

json chat_completion(const ResponseIdentity& who, json message, const char* finish_reason, json logprobs,
                     const engine::GenerationResult& r) {
  return {{"id", who.id},
          {"object", "chat.completion"},
          {"created", who.created},
          {"model", who.model},
          {"choices",
           json::array({{{"index", 0},
                         {"message", std::move(message)},
                         {"logprobs", std::move(logprobs)},
                         {"finish_reason", finish_reason}}})},
          {"usage", usage_json(r)}};
}

json chat_chunk(const ResponseIdentity& who, json delta, const char* finish_reason, json logprobs, int index) {
  return {{"id", who.id},
          {"object", "chat.completion.chunk"},
          {"created", who.created},
          {"model", who.model},
          {"choices",
           json::array({{{"index", index},
                         {"delta", std::move(delta)},
                         {"logprobs", std::move(logprobs)},
                         {"finish_reason", finish_reason ? json(finish_reason) : json(nullptr)}}})}};
}

json text_completion(const ResponseIdentity& who, const std::string& text, const char* finish_reason, json logprobs,
                     const engine::GenerationResult& r) {
  return {{"id", who.id},
          {"object", "text_completion"},
          {"created", who.created},
          {"model", who.model},
          {"choices",
           json::array({{{"index", 0}, {"text", text}, {"logprobs", std::move(logprobs)}, {"finish_reason", finish_reason}}})},
          {"usage", usage_json(r)}};
}

json completion_chunk(const ResponseIdentity& who, const std::string& text, const char* finish_reason, json logprobs,
                      int index) {
  return {{"id", who.id},
          {"object", "text_completion"},
          {"created", who.created},
          {"model", who.model},
          {"choices",
           json::array({{{"index", index},
                         {"text", text},
                         {"logprobs", std::move(logprobs)},
                         {"finish_reason", finish_reason ? json(finish_reason) : json(nullptr)}}})}};
}

json truncation_error(const engine::GenerationParams& params, const engine::GenerationResult& r) {
  if (r.finish != engine::FinishReason::Length) return nullptr;
  const char* what = !params.tool_schemas.empty() ? "tool call"
                     : !params.json_schema.empty() ? "JSON value (response_format json_schema)"
                     : params.json_object ? "JSON object (response_format json_object)"
                                          : nullptr;
  if (!what) return nullptr;
  return {{"message", std::string("the reply was cut after ") + std::to_string(r.completion_tokens) +
                          " tokens (max_tokens or the context) before its " + what +
                          " was complete: it does not match what was asked for; raise max_tokens"},
          {"type", "incomplete_output"},
          {"param", "max_tokens"},
          {"code", "output_truncated"}};
}

json usage_chunk(const ResponseIdentity& who, const char* object, const engine::GenerationResult& r) {
  return {{"id", who.id},
          {"object", object},
          {"created", who.created},
          {"model", who.model},
          {"choices", json::array()},
          {"usage", usage_json(r)}};
}

std::string sse_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

}  // namespace ringlm::server
