#include "server/request.h"

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "server/api_error.h"
#include "server/content_parts.h"
#include "sampling/sampler.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace ringlm::server {

using json = nlohmann::ordered_json;  // keys keep the order they were given in (schemas, tool arguments)

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param, "invalid_value");
}

const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;  // null = absent (clients send it)
  return &*it;
}

std::optional<double> get_number(const json& body, const char* name, double lo, double hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad(name, std::string("'") + name + "' must be a number");
  double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    std::ostringstream os;
    os << "'" << name << "' must be between " << lo << " and " << hi;
    bad(name, os.str());
  }
  return x;
}

std::optional<long long> get_integer(const json& body, const char* name, long long lo, long long hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  long long x = 0;
  // (nlohmann's is_number_integer() is also true for unsigned values, so test unsigned first.)
  if (v->is_number_unsigned()) {
    auto u = v->get<unsigned long long>();
    if (u > static_cast<unsigned long long>(std::numeric_limits<long long>::max())) {
      bad(name, std::string("'") + name + "' is out of range");
    }
    x = static_cast<long long>(u);
  } else if (v->is_number_integer()) {
    x = v->get<long long>();
  } else if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9e15) {
    x = static_cast<long long>(v->get<double>());
  } else {
    bad(name, std::string("'") + name + "' must be an integer");
  }
  if (x < lo || x > hi) {
    bad(name, std::string("'") + name + "' must be between " + std::to_string(lo) + " and " +
                  std::to_string(hi));
  }
  return x;
}

std::optional<bool> get_bool(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad(name, std::string("'") + name + "' must be a boolean");
  return v->get<bool>();
}

std::optional<std::string> get_string(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) bad(name, std::string("'") + name + "' must be a string");
  return v->get<std::string>();
}

constexpr int kMaxStops = 16;

void parse_stop(const json& body, engine::GenerationParams& p) {
  const json* v = field(body, "stop");
  if (!v) return;
  auto add = [&](const json& s) {
    if (!s.is_string()) bad("stop", "'stop' must be a string or an array of strings");
    auto str = s.get<std::string>();
    if (str.empty()) bad("stop", "'stop' strings must not be empty");
    p.stop.push_back(std::move(str));
  };
  if (v->is_array()) {
    if (v->size() > kMaxStops) bad("stop", "'stop' may hold at most " + std::to_string(kMaxStops) + " strings");
    for (const auto& s : *v) add(s);
  } else {
    add(*v);
  }
}

// Fields shared by both endpoints: sampling, length, stop, seed, streaming, n.
void parse_sampling(const json& body, SamplingRequest& r) {
  if (auto m = get_string(body, "model")) r.model = *m;
  auto& s = r.params.sampling;
  s.temperature = 1.0f;  // OpenAI's default
  if (auto t = get_number(body, "temperature", 0.0, 2.0)) s.temperature = static_cast<float>(*t);
  if (auto t = get_number(body, "top_p", 0.0, 1.0)) s.top_p = static_cast<float>(*t);
  if (auto k = get_integer(body, "top_k", 0, 1 << 20)) s.top_k = static_cast<int>(*k);
  if (auto m = get_number(body, "min_p", 0.0, 1.0)) s.min_p = static_cast<float>(*m);
  if (auto rp = get_number(body, "repetition_penalty", 0.01, 100.0)) s.repetition_penalty = static_cast<float>(*rp);
  // Accepted for compatibility, not applied (the engine has no presence/frequency penalty).
  get_number(body, "presence_penalty", -2.0, 2.0);
  get_number(body, "frequency_penalty", -2.0, 2.0);
  if (auto seed = get_integer(body, "seed", std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max())) {
    s.seed = static_cast<std::uint64_t>(*seed);
    r.seed_given = true;
  } else {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    s.seed = rng();
  }
  // max_completion_tokens (the newer name) wins over max_tokens.
  auto mt = get_integer(body, "max_tokens", 1, std::numeric_limits<int>::max());
  auto mct = get_integer(body, "max_completion_tokens", 1, std::numeric_limits<int>::max());
  if (mct) r.max_tokens = static_cast<int>(*mct);
  else if (mt) r.max_tokens = static_cast<int>(*mt);
  if (auto n = get_integer(body, "n", 1, kMaxChoices)) r.n = static_cast<int>(*n);
  // llama-server's spelling: the most drafted tokens per step for this request (capped by
  // the server's --draft-max; 0: no drafting). Only meaningful with serve --draft.
  if (auto k = get_integer(body, "speculative.n_max", 0, engine::kMaxDraftTokens))
    r.params.draft_max_request = static_cast<int>(*k);
  parse_stop(body, r.params);
  // The OpenAI ranges above are in double; the sampler works in float, where 1e-46 is 0 and
  // 1e-40 a denormal. The shared rule (sampling/sampler.h) decides on what the sampler sees,
  // here, so that nothing the sampler would refuse gets as far as a slot.
  try {
    sampling::check_sampler_params(s);
  } catch (const Error& e) {
    bad(e.param(), "'" + e.param() + "': " + e.what());
  }
  if (auto st = get_bool(body, "stream")) r.stream = *st;
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) bad("stream_options", "'stream_options' must be an object");
    if (auto iu = get_bool(*so, "include_usage")) r.include_usage = *iu;
  }
}

json normalise_messages(const json& body, std::vector<MediaRef>& media) {
  const json* v = field(body, "messages");
  if (!v) bad("messages", "'messages' is required");
  if (!v->is_array()) bad("messages", "'messages' must be an array");
  if (v->empty()) bad("messages", "'messages' must not be empty");
  json out = json::array();
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) bad(at, "'" + at + "' must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) bad(at + ".role", "'" + at + ".role' must be a string");
    json n = m;
    n["content"] = m.contains("content") ? normalise_content(m["content"], i, media) : json(nullptr);
    if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null()) {
      if (!tc->is_array()) bad(at + ".tool_calls", "'" + at + ".tool_calls' must be an array");
      for (std::size_t k = 0; k < tc->size(); ++k) {
        const std::string cat = at + ".tool_calls[" + std::to_string(k) + "]";
        json& call = n["tool_calls"][k];
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
          bad(cat, "'" + cat + "' must be an object with a 'function' object");
        }
        json& fn = call["function"];
        if (!fn.contains("name") || !fn["name"].is_string()) bad(cat + ".function.name", "'" + cat + ".function.name' must be a string");
        if (fn.contains("arguments") && fn["arguments"].is_string()) {
          // OpenAI sends arguments as JSON text; the chat template wants the object.
          json args;
          try {
            args = parse_json(fn["arguments"].get_ref<const std::string&>(), {.max_depth = kMaxJsonDepth});
          } catch (const Error&) {
            args = nullptr;
          }
          if (!args.is_object()) {
            bad(cat + ".function.arguments", "'" + cat + ".function.arguments' must be a JSON object encoded as a string");
          }
          fn["arguments"] = std::move(args);
        }
      }
    }
    out.push_back(std::move(n));
  }
  return out;
}

void parse_tools(const json& body, ChatRequest& r) {
  if (auto p = get_bool(body, "parallel_tool_calls")) r.single_tool_call = !*p;
  if (const json* t = field(body, "tools")) {
    if (!t->is_array()) bad("tools", "'tools' must be an array");
    for (std::size_t i = 0; i < t->size(); ++i) {
      const json& tool = (*t)[i];
      const std::string at = "tools[" + std::to_string(i) + "]";
      if (!tool.is_object()) bad(at, "'" + at + "' must be an object");
      if (tool.contains("type") && tool["type"] != "function") bad(at + ".type", "only function tools are supported");
      if (!tool.contains("function") || !tool["function"].is_object()) bad(at + ".function", "'" + at + ".function' must be an object");
      const json& fn = tool["function"];
      if (!fn.contains("name") || !fn["name"].is_string() || fn["name"].get<std::string>().empty()) {
        bad(at + ".function.name", "'" + at + ".function.name' must be a non-empty string");
      }
      if (fn.contains("parameters") && !fn["parameters"].is_null() && !fn["parameters"].is_object()) {
        bad(at + ".function.parameters", "'" + at + ".function.parameters' must be an object");
      }
    }
    r.tools = *t;
  }
  const json* c = field(body, "tool_choice");
  if (!c) return;
  if (c->is_string()) {
    const auto s = c->get<std::string>();
    if (s != "auto" && s != "none" && s != "required") bad("tool_choice", "'tool_choice' must be auto, none, required or a function");
    r.tool_choice = s;
  } else if (c->is_object() && c->contains("function") && (*c)["function"].is_object() &&
             (*c)["function"].contains("name") && (*c)["function"]["name"].is_string()) {
    const auto name = (*c)["function"]["name"].get<std::string>();
    json narrowed = json::array();
    for (const auto& tool : r.tools) {
      if (tool["function"]["name"] == name) narrowed.push_back(tool);
    }
    if (narrowed.empty()) bad("tool_choice", "'tool_choice' names function '" + name + "' which is not in 'tools'");
    r.tools = std::move(narrowed);
    r.tool_choice = "required";
  } else {
    bad("tool_choice", "'tool_choice' must be auto, none, required or {\"type\":\"function\",\"function\":{\"name\":...}}");
  }
  if (r.tool_choice == "required" && r.tools.empty()) bad("tool_choice", "'tool_choice' requires 'tools'");
}

void parse_response_format(const json& body, engine::GenerationParams& p) {
  const json* rf = field(body, "response_format");
  if (!rf) return;
  if (!rf->is_object()) bad("response_format", "'response_format' must be an object");
  auto type = get_string(*rf, "type");
  if (!type) bad("response_format.type", "'response_format.type' is required");
  if (*type == "text") return;
  if (*type == "json_object") {
    p.json_object = true;
    return;
  }
  if (*type != "json_schema") bad("response_format.type", "'response_format.type' must be text, json_object or json_schema");
  const json* js = field(*rf, "json_schema");
  if (!js || !js->is_object()) bad("response_format.json_schema", "'response_format.json_schema' must be an object");
  if (const json* name = field(*js, "name"); name && !name->is_string()) {
    bad("response_format.json_schema.name", "'response_format.json_schema.name' must be a string");
  }
  get_bool(*js, "strict");  // type-checked; generation is always constrained
  const json* schema = field(*js, "schema");
  if (!schema) bad("response_format.json_schema.schema", "'response_format.json_schema.schema' is required");
  if (!schema->is_object() && !schema->is_boolean()) {
    bad("response_format.json_schema.schema", "'response_format.json_schema.schema' must be an object");
  }
  p.json_schema = schema->dump();
}

// "schema_mode": "strict" | "lenient" (ringlm extension; absent = the server's --schema-mode).
void parse_schema_mode(const json& body, engine::GenerationParams& p) {
  const json* m = field(body, "schema_mode");
  if (!m) return;
  if (!m->is_string() || (*m != "strict" && *m != "lenient")) {
    bad("schema_mode", "'schema_mode' must be \"strict\" or \"lenient\"");
  }
  p.schema_mode = m->get<std::string>();
}

// Thinking: `chat_template_kwargs: {"enable_thinking": true}` (the vLLM / SGLang field; its
// other keys are not passed to the template and are ignored) or a top-level
// `"enable_thinking": true`; the kwargs one wins when both are given. `thinking_budget`
// (ringlm extension) caps the thought's tokens when a grammar applies (response_format/tools).
void parse_thinking(const json& body, ChatRequest& r) {
  if (auto e = get_bool(body, "enable_thinking")) r.enable_thinking = *e;
  if (const json* kw = field(body, "chat_template_kwargs")) {
    if (!kw->is_object()) bad("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    if (const json* e = field(*kw, "enable_thinking")) {
      if (!e->is_boolean())
        bad("chat_template_kwargs.enable_thinking", "'chat_template_kwargs.enable_thinking' must be a boolean");
      r.enable_thinking = e->get<bool>();
    }
  }
  // reasoning_effort (OpenAI): Gemma 4's thinking is on or off, so "none" and "minimal" turn it
  // off and "low", "medium", "high" turn it on (the levels are not told apart); another value
  // is refused by name. An explicit enable_thinking wins.
  if (auto effort = get_string(body, "reasoning_effort")) {
    const bool on = *effort == "low" || *effort == "medium" || *effort == "high";
    if (!on && *effort != "none" && *effort != "minimal")
      bad("reasoning_effort", "'reasoning_effort' must be none, minimal, low, medium or high (got '" + effort->substr(0, 40) + "')");
    const json* kw = field(body, "chat_template_kwargs");
    if (!field(body, "enable_thinking") && !(kw && field(*kw, "enable_thinking"))) r.enable_thinking = on;
  }
  if (auto b = get_integer(body, "thinking_budget", 0, std::numeric_limits<int>::max())) {
    r.params.thinking_budget = static_cast<int>(*b);
  }
  r.params.guided_thinking = r.enable_thinking;  // used only when a grammar applies
}

}  // namespace

json parse_body(std::string_view body) {
  // Linear in the body's bytes whatever its shape (util/json_parse.h: ordered_json's own
  // parser is quadratic in the keys of one object), and the depth is checked while parsing,
  // so a hostile body cannot drive deep recursion anywhere downstream (dumping, templates).
  json j;
  try {
    j = parse_json(body, {.max_depth = kMaxJsonDepth});
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::resource_limit)
      throw ApiError(400, "request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels", "", "invalid_json");
    throw ApiError(400, std::string("request body is not valid JSON: ") + e.what(), "", "invalid_json");
  }
  if (!j.is_object()) throw ApiError(400, "request body must be a JSON object", "", "invalid_json");
  return j;
}

ChatRequest parse_chat_request(const json& body) {
  ChatRequest r;
  r.messages = normalise_messages(body, r.media);
  parse_sampling(body, r);
  parse_tools(body, r);
  parse_response_format(body, r.params);
  parse_schema_mode(body, r.params);
  parse_thinking(body, r);
  if (auto sp = get_bool(body, "schema_in_prompt")) r.schema_in_prompt = *sp;
  if (auto lp = get_bool(body, "logprobs")) r.params.logprobs = *lp;
  if (auto tl = get_integer(body, "top_logprobs", 0, 20)) {
    if (!r.params.logprobs && *tl > 0) bad("top_logprobs", "'top_logprobs' requires 'logprobs': true");
    r.params.top_logprobs = static_cast<int>(*tl);
  }
  return r;
}

CompletionRequest parse_completion_request(const json& body) {
  CompletionRequest r;
  const json* p = field(body, "prompt");
  if (!p) bad("prompt", "'prompt' is required");
  if (p->is_string()) {
    r.prompt = p->get<std::string>();
  } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
    r.prompt = (*p)[0].get<std::string>();
  } else {
    bad("prompt", "'prompt' must be a string or an array of one string");
  }
  parse_sampling(body, r);
  parse_response_format(body, r.params);
  parse_schema_mode(body, r.params);
  // Completions' `logprobs` is the number of alternatives per token (0..5 in OpenAI; up to 20 here).
  if (auto lp = get_integer(body, "logprobs", 0, 20)) {
    r.params.logprobs = true;
    r.params.top_logprobs = static_cast<int>(*lp);
  }
  if (auto e = get_bool(body, "echo")) r.echo = *e;
  if (const json* sfx = field(body, "suffix"); sfx && !(sfx->is_string() && sfx->get<std::string>().empty())) {
    bad("suffix", "'suffix' is not supported");
  }
  return r;
}

}  // namespace ringlm::server
