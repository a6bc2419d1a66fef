// Response shapes of the OpenAI-compatible routes, driven over HTTP against the fake backend.
#include "server_fixture.h"

namespace ringlm::server::testing {
namespace {

std::string content_of(const json& completion) { return completion["choices"][0]["message"]["content"].get<std::string>(); }

// Concatenated delta contents of a streamed chat response; also checks the framing.
std::string streamed_content(const std::vector<std::string>& payloads, std::string* finish = nullptr) {
  EXPECT_GE(payloads.size(), 3u);
  EXPECT_EQ(payloads.back(), "[DONE]");
  std::string text;
  for (std::size_t i = 0; i + 1 < payloads.size(); ++i) {
    json chunk = json::parse(payloads[i]);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    if (chunk["choices"].empty()) continue;  // usage chunk
    const json& choice = chunk["choices"][0];
    if (choice["delta"].contains("content") && choice["delta"]["content"].is_string()) {
      text += choice["delta"]["content"].get<std::string>();
    }
    if (!choice["finish_reason"].is_null() && finish) *finish = choice["finish_reason"].get<std::string>();
  }
  return text;
}

class HttpApi : public ServerTest {
 protected:
  void SetUp() override { start(); }
};

TEST_F(HttpApi, PlainChatCompletionHasOpenAIShape) {
  auto r = post("/v1/chat/completions", chat("hello", {{"temperature", 0}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const json& j = r.j;
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["model"], "ringlm-fake");
  EXPECT_TRUE(j["created"].is_number_integer());
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  const std::string content = content_of(j);
  EXPECT_EQ(content.rfind("Fake reply:", 0), 0u) << content;
  // One fake token per byte: usage must count exactly what came back.
  EXPECT_EQ(j["usage"]["completion_tokens"], content.size());
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int>() + j["usage"]["completion_tokens"].get<int>());
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  // The fake renders "<|user|>hello\n<|assistant|>".
  EXPECT_EQ(j["usage"]["prompt_tokens"], std::string("<|user|>hello\n<|assistant|>").size());
}

TEST_F(HttpApi, MaxTokensEndsWithLength) {
  for (const char* field : {"max_tokens", "max_completion_tokens"}) {
    auto r = post("/v1/chat/completions", chat("hello", {{field, 7}}));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.j["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(r.j["usage"]["completion_tokens"], 7);
    EXPECT_EQ(backend_->last_seen().params.max_tokens, 7);
  }
}

TEST_F(HttpApi, SamplingParametersReachTheBackend) {
  auto r = post("/v1/chat/completions",
                chat("hi", {{"temperature", 0.7}, {"top_p", 0.9}, {"top_k", 40}, {"min_p", 0.05}, {"repetition_penalty", 1.1},
                            {"seed", 1234}, {"stop", "zzz"}, {"max_tokens", 20}, {"unknown_field", {{"x", 1}}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  auto p = backend_->last_seen().params;
  EXPECT_FLOAT_EQ(p.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(p.sampling.top_p, 0.9f);
  EXPECT_EQ(p.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(p.sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(p.sampling.seed, 1234u);
  EXPECT_EQ(p.stop, std::vector<std::string>{"zzz"});
  EXPECT_EQ(p.max_tokens, 20);
  // Without max_tokens the server fills in what is left of the context (capped by its limit).
  ASSERT_EQ(post("/v1/chat/completions", chat("hi")).status, 200);
  EXPECT_EQ(backend_->last_seen().params.max_tokens, 4096 - static_cast<int>(std::string("<|user|>hi\n<|assistant|>").size()));
  EXPECT_FLOAT_EQ(backend_->last_seen().params.sampling.temperature, 1.0f);  // OpenAI's default
}

TEST_F(HttpApi, SameSeedSameReply) {
  auto a = post("/v1/chat/completions", chat("x", {{"seed", 7}}));
  auto b = post("/v1/chat/completions", chat("x", {{"seed", 7}}));
  auto c = post("/v1/chat/completions", chat("x", {{"seed", 8}}));
  EXPECT_EQ(content_of(a.j), content_of(b.j));
  EXPECT_NE(content_of(a.j), content_of(c.j));
}

TEST_F(HttpApi, StreamedChatEqualsNonStreamed) {
  auto plain = post("/v1/chat/completions", chat("stream me", {{"temperature", 0}}));
  auto streamed = post("/v1/chat/completions",
                       chat("stream me", {{"temperature", 0}, {"stream", true}, {"stream_options", {{"include_usage", true}}}}));
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  auto payloads = sse_payloads(streamed.body);
  ASSERT_GE(payloads.size(), 4u);
  json first = json::parse(payloads[0]);
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string finish;
  EXPECT_EQ(streamed_content(payloads, &finish), content_of(plain.j));
  EXPECT_EQ(finish, "stop");
  json usage = json::parse(payloads[payloads.size() - 2]);  // the usage chunk comes just before [DONE]
  EXPECT_TRUE(usage["choices"].empty());
  // Token counts agree; cached_tokens may not: the second request reuses the first one's
  // KV cache only when it lands on the same slot.
  for (const char* k : {"prompt_tokens", "completion_tokens", "total_tokens"})
    EXPECT_EQ(usage["usage"][k], plain.j["usage"][k]) << k;
  // All chunks of one response share its id.
  for (std::size_t i = 0; i + 1 < payloads.size(); ++i) EXPECT_EQ(json::parse(payloads[i])["id"], first["id"]);
}

TEST_F(HttpApi, StopStringsCutTheReplyStreamedOrNot) {
  const std::string full = content_of(post("/v1/chat/completions", chat("s", {{"temperature", 0}})).j);
  ASSERT_GT(full.size(), 30u);
  const std::string stop = full.substr(20, 4);
  const std::string expected = full.substr(0, full.find(stop));
  auto r = post("/v1/chat/completions", chat("s", {{"temperature", 0}, {"stop", json::array({stop, "never-seen"})}}));
  EXPECT_EQ(content_of(r.j), expected);
  EXPECT_EQ(r.j["choices"][0]["finish_reason"], "stop");
  auto s = post("/v1/chat/completions", chat("s", {{"temperature", 0}, {"stop", stop}, {"stream", true}}));
  EXPECT_EQ(streamed_content(sse_payloads(s.body)), expected);
}

TEST_F(HttpApi, JsonSchemaIsPassedAndHonoured) {
  json schema = {{"type", "object"},
                 {"properties", {{"name", {{"type", "string"}}}, {"age", {{"type", "integer"}}}, {"kind", {{"enum", {"a", "b"}}}}}},
                 {"required", {"name", "age", "kind"}}};
  json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"schema", schema}, {"strict", true}}}};
  auto r = post("/v1/chat/completions", chat("extract", {{"response_format", rf}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(backend_->last_seen().params.json_schema), schema);
  EXPECT_FALSE(backend_->last_seen().params.json_object);
  json value = json::parse(content_of(r.j));
  EXPECT_TRUE(value["name"].is_string());
  EXPECT_TRUE(value["age"].is_number_integer());
  EXPECT_EQ(value["kind"], "a");

  auto o = post("/v1/chat/completions", chat("extract", {{"response_format", {{"type", "json_object"}}}}));
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_TRUE(backend_->last_seen().params.json_object);
  EXPECT_TRUE(backend_->last_seen().params.json_schema.empty());
  EXPECT_TRUE(json::parse(content_of(o.j)).is_object());

  auto t = post("/v1/chat/completions", chat("extract", {{"response_format", {{"type", "text"}}}}));
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_FALSE(backend_->last_seen().params.json_object);
}

TEST_F(HttpApi, SchemaTheEngineRejectsIs400BeforeAnyStream) {
  json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "object"}, {"x-fake-reject", true}}}}}};
  for (bool stream : {false, true}) {
    auto r = post("/v1/chat/completions", chat("x", {{"response_format", rf}, {"stream", stream}}));
    json e = expect_error(r, 400);
    EXPECT_EQ(e["param"], "response_format");
  }
}

json weather_tools() {
  json params = {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}};
  return json::array({{{"type", "function"}, {"function", {{"name", "get_weather"}, {"description", "Weather"}, {"parameters", params}}}},
                      {{"type", "function"}, {"function", {{"name", "get_time"}, {"parameters", {{"type", "object"}}}}}}});
}

TEST_F(HttpApi, ToolsComeBackAsToolCalls) {
  auto r = post("/v1/chat/completions", chat("weather in Paris?", {{"tools", weather_tools()}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json(backend_->last_seen().tools), weather_tools());
  EXPECT_EQ(backend_->last_seen().tool_choice, "auto");
  const json& choice = r.j["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  const json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  ASSERT_TRUE(call["function"]["arguments"].is_string());  // JSON text, as OpenAI sends it
  EXPECT_TRUE(json::parse(call["function"]["arguments"].get<std::string>())["city"].is_string());
}

TEST_F(HttpApi, ToolChoiceNarrowsOrDisablesTools) {
  json named = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
  auto r = post("/v1/chat/completions", chat("time?", {{"tools", weather_tools()}, {"tool_choice", named}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(backend_->last_seen().tool_choice, "required");
  ASSERT_EQ(backend_->last_seen().tools.size(), 1u);
  EXPECT_EQ(r.j["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "get_time");

  auto none = post("/v1/chat/completions", chat("time?", {{"tools", weather_tools()}, {"tool_choice", "none"}}));
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_EQ(backend_->last_seen().tool_choice, "none");
  EXPECT_EQ(none.j["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(none.j["choices"][0]["message"].contains("tool_calls"));
}

TEST_F(HttpApi, StreamedToolCallsCarryIndexAndFinishReason) {
  auto r = post("/v1/chat/completions", chat("weather?", {{"tools", weather_tools()}, {"stream", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  auto payloads = sse_payloads(r.body);
  json calls;
  std::string finish;
  for (std::size_t i = 0; i + 1 < payloads.size(); ++i) {
    json c = json::parse(payloads[i]);
    const json& choice = c["choices"][0];
    if (choice["delta"].contains("tool_calls")) calls = choice["delta"]["tool_calls"];
    if (choice["delta"].contains("content")) {
      EXPECT_EQ(choice["delta"]["content"], "");  // no raw tool-call markup leaks into content
    }
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_TRUE(json::parse(calls[0]["function"]["arguments"].get<std::string>()).is_object());
  EXPECT_EQ(finish, "tool_calls");
}

// Thinking (issue #16): chat_template_kwargs.enable_thinking renders the template with
// thinking on and makes a schema start after the thought; the thought comes back as
// reasoning_content, the answer alone as content (the fake backend thinks "<think>...</think>").
TEST_F(HttpApi, EnableThinkingSplitsReasoningFromContent) {
  json schema = {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}}}}}, {"required", {"n"}}};
  json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "r"}, {"schema", schema}}}};
  auto r = post("/v1/chat/completions", chat("think", {{"response_format", rf}, {"chat_template_kwargs", {{"enable_thinking", true}}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(backend_->last_seen().enable_thinking);
  EXPECT_TRUE(backend_->last_seen().params.guided_thinking);
  const json& message = r.j["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "The fake backend thinks it over.");
  EXPECT_TRUE(json::parse(content_of(r.j))["n"].is_number_integer()) << r.body;  // the thought is not in content

  // Streamed: reasoning_content deltas first, then content deltas; each joins to the same text.
  auto s = post("/v1/chat/completions", chat("think", {{"response_format", rf}, {"enable_thinking", true}, {"stream", true}}));
  ASSERT_EQ(s.status, 200) << s.body;
  auto payloads = sse_payloads(s.body);
  std::string reasoning;
  bool content_seen = false;
  for (std::size_t i = 0; i + 1 < payloads.size(); ++i) {
    const json chunk = json::parse(payloads[i]);
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("reasoning_content")) {
      EXPECT_FALSE(content_seen) << "reasoning after content";
      reasoning += delta["reasoning_content"].get<std::string>();
    }
    if (delta.contains("content") && !delta["content"].get<std::string>().empty()) content_seen = true;
  }
  EXPECT_EQ(reasoning, message["reasoning_content"]);
  EXPECT_EQ(streamed_content(payloads), content_of(r.j));

  // Without it nothing changes: no thinking in the template, no reasoning_content.
  auto off = post("/v1/chat/completions", chat("think", {{"response_format", rf}}));
  ASSERT_EQ(off.status, 200) << off.body;
  EXPECT_FALSE(backend_->last_seen().enable_thinking);
  EXPECT_FALSE(backend_->last_seen().params.guided_thinking);
  EXPECT_FALSE(off.j["choices"][0]["message"].contains("reasoning_content"));
  EXPECT_EQ(content_of(off.j), content_of(r.j));

  auto bad = post("/v1/chat/completions", chat("think", {{"chat_template_kwargs", {{"enable_thinking", "yes"}}}}));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.j["error"]["param"], "chat_template_kwargs.enable_thinking");
}

// With tools active and thinking on, the streamed reply carries the thought as
// reasoning_content before the tool call.
TEST_F(HttpApi, ThinkingWithToolsStreamsReasoningBeforeTheCall) {
  auto r = post("/v1/chat/completions",
                chat("weather?", {{"tools", weather_tools()}, {"tool_choice", "required"}, {"enable_thinking", true}, {"stream", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(backend_->last_seen().params.guided_thinking);
  std::string reasoning, order;
  auto payloads = sse_payloads(r.body);
  for (std::size_t i = 0; i + 1 < payloads.size(); ++i) {
    const json chunk = json::parse(payloads[i]);
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>(), order += 'r';
    if (delta.contains("tool_calls")) order += 't';
  }
  EXPECT_EQ(reasoning, "The fake backend thinks it over.");
  EXPECT_EQ(order, "rt");
}

TEST_F(HttpApi, AssistantToolCallHistoryIsNormalised) {
  json messages = json::array(
      {{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "weather "}}, {{"type", "text"}, {"text", "please"}}})}},
       {{"role", "assistant"},
        {"content", nullptr},
        {"tool_calls", json::array({{{"id", "call_1"}, {"type", "function"},
                                     {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Oslo\"}"}}}}})}},
       {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}}});
  auto r = post("/v1/chat/completions", {{"messages", messages}});
  ASSERT_EQ(r.status, 200) << r.body;
  json seen = backend_->last_seen().messages;
  EXPECT_EQ(seen[0]["content"], "weather please");
  EXPECT_EQ(seen[1]["tool_calls"][0]["function"]["arguments"], json({{"city", "Oslo"}}));
  EXPECT_EQ(seen[2]["content"], "sunny");
}

TEST_F(HttpApi, LogprobsHaveTokensBytesAndAlternatives) {
  auto r = post("/v1/chat/completions", chat("lp", {{"temperature", 0}, {"logprobs", true}, {"top_logprobs", 3}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const json& content = r.j["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), r.j["usage"]["completion_tokens"].get<std::size_t>());
  std::string rebuilt;
  for (const auto& e : content) {
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    ASSERT_EQ(e["top_logprobs"].size(), 3u);
    for (std::size_t k = 1; k < 3; ++k) {
      EXPECT_LE(e["top_logprobs"][k]["logprob"].get<double>(), e["top_logprobs"][k - 1]["logprob"].get<double>());
    }
    for (const auto& b : e["bytes"]) rebuilt.push_back(static_cast<char>(b.get<int>()));
  }
  // The bytes of all tokens, concatenated, are exactly the reply (multi-byte characters included).
  EXPECT_EQ(rebuilt, content_of(r.j));

  auto s = post("/v1/chat/completions", chat("lp", {{"temperature", 0}, {"logprobs", true}, {"stream", true}}));
  std::size_t streamed_entries = 0;
  for (const auto& p : sse_payloads(s.body)) {
    if (p == "[DONE]") continue;
    json c = json::parse(p);
    if (!c["choices"].empty() && c["choices"][0]["logprobs"].is_object()) streamed_entries += c["choices"][0]["logprobs"]["content"].size();
  }
  EXPECT_EQ(streamed_entries, content.size());
}

TEST_F(HttpApi, CompletionsEndpoint) {
  auto r = post("/v1/completions", {{"prompt", "Once upon"}, {"max_tokens", 9}, {"logprobs", 2}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j["object"], "text_completion");
  EXPECT_EQ(r.j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  const json& choice = r.j["choices"][0];
  EXPECT_EQ(choice["text"].get<std::string>().size(), 9u);
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(choice["logprobs"]["tokens"].size(), 9u);
  EXPECT_EQ(choice["logprobs"]["token_logprobs"].size(), 9u);
  EXPECT_EQ(choice["logprobs"]["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(choice["logprobs"]["text_offset"][0], 0);
  EXPECT_EQ(r.j["usage"]["prompt_tokens"], 9);  // one fake token per byte of "Once upon"

  auto list = post("/v1/completions", {{"prompt", {"Once upon"}}, {"max_tokens", 9}, {"temperature", 0}});
  EXPECT_EQ(list.j["choices"][0]["text"], choice["text"]);
  auto echo = post("/v1/completions", {{"prompt", "Once upon"}, {"max_tokens", 9}, {"temperature", 0}, {"echo", true}});
  EXPECT_EQ(echo.j["choices"][0]["text"], "Once upon" + choice["text"].get<std::string>());

  auto s = post("/v1/completions", {{"prompt", "Once upon"}, {"max_tokens", 9}, {"temperature", 0}, {"stream", true}});
  auto payloads = sse_payloads(s.body);
  ASSERT_EQ(payloads.back(), "[DONE]");
  std::string text, finish;
  for (std::size_t i = 0; i + 1 < payloads.size(); ++i) {
    json c = json::parse(payloads[i]);
    EXPECT_EQ(c["object"], "text_completion");
    text += c["choices"][0]["text"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, choice["text"]);
  EXPECT_EQ(finish, "length");
}

TEST_F(HttpApi, ModelsAndHealth) {
  auto m = request("GET", "/v1/models");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.j["object"], "list");
  EXPECT_EQ(m.j["data"][0]["id"], "ringlm-fake");
  EXPECT_EQ(m.j["data"][0]["object"], "model");
  auto one = request("GET", "/v1/models/ringlm-fake");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.j["id"], "ringlm-fake");
  EXPECT_EQ(expect_error(request("GET", "/v1/models/other"), 404)["code"], "model_not_found");
  EXPECT_EQ(expect_error(request("POST", "/v1/models/ringlm-fake", "{}"), 405)["code"], "method_not_allowed");
  auto h = request("GET", "/health");
  ASSERT_EQ(h.status, 200);
  EXPECT_EQ(h.j["status"], "ok");
  EXPECT_EQ(h.j["slots"], 2);
}

}  // namespace
}  // namespace ringlm::server::testing
