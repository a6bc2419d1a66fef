// Request-body parsing without a server: what each field becomes, and what is refused.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "server/api_error.h"
#include "server/request.h"
#include "../cpu_time.h"
#include "../sanitizer_build.h"

namespace ringlm::server {
namespace {

using nlohmann::json;

json base() { return {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}; }

int status_of(const std::string& body) {
  try {
    parse_chat_request(parse_body(body));
  } catch (const ApiError& e) {
    return e.status();
  }
  return 200;
}

TEST(RequestParse, DefaultsFollowOpenAI) {
  ChatRequest r = parse_chat_request(base());
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r.params.sampling.top_p, 1.0f);
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.params.logprobs);
  EXPECT_EQ(r.tool_choice, "auto");
  EXPECT_TRUE(r.tools.empty());
  EXPECT_FALSE(r.seed_given);
}

// llama-server's per-request speculative.n_max: 0..16 (0 turns the server's drafting off for
// this request); absent: -1, the server's --draft-max.
TEST(RequestParse, SpeculativeNMax) {
  EXPECT_EQ(parse_chat_request(base()).params.draft_max_request, -1);
  json b = base();
  b["speculative.n_max"] = 2;
  EXPECT_EQ(parse_chat_request(b).params.draft_max_request, 2);
  b["speculative.n_max"] = 0;
  EXPECT_EQ(parse_chat_request(b).params.draft_max_request, 0);
  b["speculative.n_max"] = 17;
  EXPECT_EQ(status_of(b.dump()), 400);
  b["speculative.n_max"] = "4";
  EXPECT_EQ(status_of(b.dump()), 400);
}

TEST(RequestParse, MaxCompletionTokensWins) {
  json b = base();
  b["max_tokens"] = 10;
  b["max_completion_tokens"] = 20;
  EXPECT_EQ(parse_chat_request(b).max_tokens, 20);
  b.erase("max_completion_tokens");
  EXPECT_EQ(parse_chat_request(b).max_tokens, 10);
}

TEST(RequestParse, StopAcceptsStringOrList) {
  json b = base();
  b["stop"] = "END";
  EXPECT_EQ(parse_chat_request(b).params.stop, std::vector<std::string>{"END"});
  b["stop"] = {"a", "b"};
  EXPECT_EQ(parse_chat_request(b).params.stop, (std::vector<std::string>{"a", "b"}));
  b["stop"] = json::array();
  for (int i = 0; i < 17; ++i) b["stop"].push_back("s");
  EXPECT_THROW(parse_chat_request(b), ApiError);
}

TEST(RequestParse, IntegralFloatsAreIntegers) {
  json b = base();
  b["max_tokens"] = 12.0;
  EXPECT_EQ(parse_chat_request(b).max_tokens, 12);
  b["seed"] = -1;
  EXPECT_EQ(parse_chat_request(b).params.sampling.seed, static_cast<std::uint64_t>(-1));
  b["seed"] = 18446744073709551615ull;  // above int64: refused, not wrapped silently
  EXPECT_THROW(parse_chat_request(b), ApiError);
}

TEST(RequestParse, ResponseFormatSchemaIsDumped) {
  json b = base();
  b["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", {{"type", "object"}}}}}};
  EXPECT_EQ(json::parse(parse_chat_request(b).params.json_schema), json({{"type", "object"}}));
  b["response_format"]["json_schema"]["strict"] = "yes";
  EXPECT_THROW(parse_chat_request(b), ApiError);
}

TEST(RequestParse, BadToolCallArgumentsAreRefused) {
  json b = base();
  b["messages"].push_back({{"role", "assistant"},
                           {"tool_calls", {{{"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{not json"}}}}}}});
  try {
    parse_chat_request(b);
    FAIL() << "bad arguments accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "messages[1].tool_calls[0].function.arguments");
  }
}

// Thinking (issue #16): chat_template_kwargs.enable_thinking (vLLM / SGLang) or a top-level
// enable_thinking turns it on and makes a grammar start after the thought channel.
TEST(RequestParse, EnableThinkingFromKwargsOrTopLevel) {
  ChatRequest off = parse_chat_request(base());
  EXPECT_FALSE(off.enable_thinking);
  EXPECT_FALSE(off.params.guided_thinking);
  EXPECT_EQ(off.params.thinking_budget, 0);
  json b = base();
  b["chat_template_kwargs"] = {{"enable_thinking", true}, {"other_template_key", 3}};
  b["thinking_budget"] = 40;
  ChatRequest on = parse_chat_request(b);
  EXPECT_TRUE(on.enable_thinking);
  EXPECT_TRUE(on.params.guided_thinking);
  EXPECT_EQ(on.params.thinking_budget, 40);
  json t = base();
  t["enable_thinking"] = true;
  EXPECT_TRUE(parse_chat_request(t).enable_thinking);
  t["chat_template_kwargs"] = {{"enable_thinking", false}};  // the kwargs field wins
  EXPECT_FALSE(parse_chat_request(t).params.guided_thinking);
  json n = base();
  n["chat_template_kwargs"] = nullptr;  // null = absent
  n["enable_thinking"] = nullptr;
  EXPECT_FALSE(parse_chat_request(n).enable_thinking);
}

TEST(RequestParse, ThinkingFieldsOfTheWrongTypeNameTheField) {
  auto param_of = [](const char* key, json value, json inner = nullptr) -> std::string {
    json b = base();
    if (inner.is_null()) b[key] = std::move(value);
    else b[key] = {{inner.get<std::string>(), std::move(value)}};
    try {
      parse_chat_request(b);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_NE(std::string(e.what()).find(e.param()), std::string::npos) << e.what();
      return e.param();
    }
    return "accepted";
  };
  EXPECT_EQ(param_of("chat_template_kwargs", "enable_thinking"), "chat_template_kwargs");
  EXPECT_EQ(param_of("chat_template_kwargs", json::array({true})), "chat_template_kwargs");
  EXPECT_EQ(param_of("chat_template_kwargs", "yes", "enable_thinking"), "chat_template_kwargs.enable_thinking");
  EXPECT_EQ(param_of("chat_template_kwargs", 1, "enable_thinking"), "chat_template_kwargs.enable_thinking");
  EXPECT_EQ(param_of("enable_thinking", "true"), "enable_thinking");
  EXPECT_EQ(param_of("enable_thinking", 1), "enable_thinking");
  EXPECT_EQ(param_of("thinking_budget", -1), "thinking_budget");
  EXPECT_EQ(param_of("thinking_budget", 2.5), "thinking_budget");
}

TEST(RequestParse, HostileBodiesGive400) {
  EXPECT_EQ(status_of(""), 400);
  EXPECT_EQ(status_of("null"), 400);
  EXPECT_EQ(status_of("{\"messages\":\"\\ud800\"}"), 400);  // lone surrogate: invalid JSON text
  EXPECT_EQ(status_of(std::string(100000, '[')), 400);
  // The outer object is level 1: 63 more levels is the most accepted.
  auto nested = [](int n) {
    return "{\"a\":" + std::string(static_cast<std::size_t>(n), '[') + std::string(static_cast<std::size_t>(n), ']') +
           ",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
  };
  EXPECT_EQ(status_of(nested(63)), 200);
  EXPECT_EQ(status_of(nested(64)), 400);
  EXPECT_EQ(status_of("{\"messages\":[{\"role\":\"user\",\"content\":\"\\\"[[[[\"}]}"), 200);  // brackets in strings don't count
}

TEST(RequestParse, CompletionLogprobsIsACount) {
  CompletionRequest r = parse_completion_request({{"prompt", "x"}, {"logprobs", 3}});
  EXPECT_TRUE(r.params.logprobs);
  EXPECT_EQ(r.params.top_logprobs, 3);
  EXPECT_THROW(parse_completion_request({{"prompt", "x"}, {"logprobs", true}}), ApiError);
  EXPECT_THROW(parse_completion_request({{"prompt", "x"}, {"suffix", "y"}}), ApiError);
}

}  // namespace
}  // namespace ringlm::server

namespace ringlm::server {
namespace {

// A cheap in-suite fuzz: random mutations of valid bodies must only ever produce a parsed
// request or an ApiError 400, never another exception (or a crash under ASan).
TEST(RequestParse, RandomMutationsOnlyEverGive400) {
  const std::vector<std::string> seeds = {
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.5,"stop":["a","b"],"max_tokens":10})",
      R"({"messages":[{"role":"system","content":[{"type":"text","text":"x"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}}})",
      R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object","properties":{"a":{"type":"string"}}},"strict":true}},"logprobs":true,"top_logprobs":3,"stream":true,"stream_options":{"include_usage":true},"seed":42})",
      R"({"prompt":["once"],"logprobs":2,"echo":true,"max_tokens":5,"n":1})",
  };
  const std::vector<std::string> pieces = {"{", "}", "[", "]", "\"", ",", ":", "null", "1e999", "-0", "\\u0000", "\xff", "true",
                                           "\\ud800", "18446744073709551616", "-1", "0.5", "\"messages\"", "\"tools\""};
  std::mt19937 rng(20261130);
  int parsed = 0, refused = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string body = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !body.empty(); ++e) {
      const std::size_t at = rng() % body.size();
      switch (rng() % 4) {
        case 0: body[at] = static_cast<char>(rng() % 256); break;
        case 1: body.erase(at, 1 + rng() % 8); break;
        case 2: body.insert(at, body.substr(at, rng() % 16)); break;
        default: body.insert(at, pieces[rng() % pieces.size()]); break;
      }
    }
    try {
      nlohmann::json j = parse_body(body);
      if (j.contains("prompt")) parse_completion_request(j);
      else parse_chat_request(j);
      ++parsed;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400) << body;
      EXPECT_FALSE(std::string(e.what()).empty());
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "unexpected " << e.what() << " for body: " << body;
    }
  }
  // Both outcomes must occur, or the mutations are not exercising anything.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(refused, 100);
}

// Issue #28: a body with an unknown field holding 131k distinct short keys (1.04 MB, under
// --max-body) took 80 s to parse on the connection thread. Now linear: also the same keys in a
// message (which goes whole to the chat template) and a megabyte of nesting at the limit.
TEST(RequestParse, OneMegabyteAdversarialBodyParsesFast) {
  auto keys = [](std::size_t n) {
    std::string s = "{";
    for (std::size_t i = 0; i < n; ++i) {
      if (i) s += ',';
      s += '"';
      for (std::size_t v = i, k = 0; k < 4; ++k, v /= 26) s += static_cast<char>('a' + v % 26);
      s += "\":1";
    }
    return s + "}";
  };
  const std::string junk = keys(131072);
  const std::string unknown_field = "{\"junk\":" + junk + R"(,"messages":[{"role":"user","content":"hi"}],"top_p":0.5})";
  const std::string in_message = R"({"messages":[{"role":"user","content":"hi","junk":)" + junk + "}]}";
  std::string deep = R"({"messages":[{"role":"user","content":"hi"}],"junk":[)";
  while (deep.size() < (1u << 20)) deep += std::string(62, '[') + std::string(62, ']') + ",";
  deep.back() = ']';
  deep += "}";
  for (const std::string* body : std::initializer_list<const std::string*>{&unknown_field, &in_message, &deep}) {
    ASSERT_GT(body->size(), 1000000u);
    // CPU time of this thread, not wall time: a loaded host (ctest -j2) must not fail it.
    ChatRequest r;
    const double s = ringlm::testing::thread_cpu_seconds_of([&] { r = parse_chat_request(parse_body(*body)); });
    std::printf("request body of %zu bytes parsed in %.3f s of CPU\n", body->size(), s);
    EXPECT_LT(s, ringlm::testing::kParseBoundSeconds);
    EXPECT_EQ(r.messages.size(), 1u);
  }
}

TEST(RequestParse, SamplingIsCheckedAsTheFloatTheSamplerUses) {
  auto param_of = [](const std::string& body) -> std::string {
    try {
      parse_completion_request(parse_body(body));
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      return e.param();
    }
    return "";
  };
  EXPECT_EQ(param_of(R"({"prompt":"x","top_p":1e-46})"), "top_p");  // issue #28's crash
  EXPECT_EQ(param_of(R"({"prompt":"x","top_p":1e-40})"), "");       // a denormal: harmless
  EXPECT_EQ(param_of(R"({"prompt":"x","temperature":1e-40})"), "temperature");
  EXPECT_EQ(param_of(R"({"prompt":"x","temperature":1e-46})"), "");  // 0 as a float: greedy
  EXPECT_EQ(param_of(R"({"prompt":"x","repetition_penalty":0.01})"), "");
  EXPECT_EQ(param_of(R"({"prompt":"x","top_p":1})"), "");
}

}  // namespace
}  // namespace ringlm::server

TEST(ApiErrorMapping, TheErrorKindDecidesTheStatus) {
  using ringlm::Error;
  using ringlm::ErrorKind;
  using ringlm::server::ApiError;
  const ApiError bad = ApiError::from(Error("top_p must be in (0, 1]"), "generation failed: ");
  EXPECT_EQ(bad.status(), 400);
  EXPECT_STREQ(bad.what(), "top_p must be in (0, 1]");
  EXPECT_EQ(bad.code(), "invalid_request");
  EXPECT_EQ(ApiError::from(Error("x", ErrorKind::resource_limit)).status(), 400);
  EXPECT_EQ(ApiError::from(Error("x", ErrorKind::unsupported)).code(), "unsupported");
  const ApiError bug = ApiError::from(Error("sampler: no token", ErrorKind::internal), "generation failed: ");
  EXPECT_EQ(bug.status(), 500);
  EXPECT_STREQ(bug.what(), "generation failed: sampler: no token");
  EXPECT_EQ(bug.type(), "server_error");
  EXPECT_EQ(ApiError::from(Error("m.gguf: truncated", ErrorKind::invalid_model_file)).status(), 500);
  const ApiError named = ApiError::from(Error("bad schema", ErrorKind::invalid_argument, "response_format"), "", "messages");
  EXPECT_EQ(named.param(), "response_format");
  EXPECT_EQ(ApiError::from(Error("bad"), "", "messages").param(), "messages");
}
