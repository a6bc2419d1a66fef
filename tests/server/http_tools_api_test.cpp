// What tools written for llama-server and the OpenAI SDKs call beyond chat itself (issue #30):
// /tokenize, /detokenize, /apply-template, /props, n > 1, max_tokens clamped with a header,
// parallel_tool_calls, reasoning_effort, CORS preflights that echo the SDK's headers, and a
// guided reply cut by a limit flagged on its choice.
#include "server/request.h"
#include "server_fixture.h"

namespace ringlm::server::testing {
namespace {

class ToolsApi : public ServerTest {
 protected:
  void SetUp() override {
    ServerOptions so;
    so.max_tokens = 500;
    so.cors_origin = "http://app.example";
    so.model_notice = "a stand-in";
    FakeBackendOptions fo;
    fo.context_length = 1000;
    fo.token_delay = std::chrono::microseconds(0);
    start(fo, so);
  }

  httplib::Result raw(const std::string& method, const std::string& path, const httplib::Headers& headers,
                      const std::string& body = "") {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(20);
    if (method == "OPTIONS") return c.Options(path.c_str(), headers);
    return c.Post(path.c_str(), headers, body, "application/json");
  }
};

TEST_F(ToolsApi, TokenizeAndDetokenizeRoundTrip) {
  // The fake backend has one token per byte: "é" is two tokens, each part of a character.
  auto r = post("/tokenize", {{"content", "ab\xC3\xA9"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j["tokens"], json({97, 98, 0xC3, 0xA9}));
  auto p = post("/tokenize", {{"content", "a\xC3\xA9"}, {"with_pieces", true}});
  ASSERT_EQ(p.status, 200) << p.body;
  EXPECT_EQ(p.j["tokens"][0], json({{"id", 97}, {"piece", "a"}}));
  EXPECT_EQ(p.j["tokens"][1]["piece"], json({0xC3}));  // not UTF-8 on its own: bytes
  auto d = post("/detokenize", {{"tokens", {97, 98, 0xC3, 0xA9}}});
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(d.j["content"], "ab\xC3\xA9");
  EXPECT_EQ(expect_error(post("/tokenize", {{"text", "x"}}), 400)["param"], "content");
  EXPECT_EQ(expect_error(post("/tokenize", {{"content", "x"}, {"with_pieces", "yes"}}), 400)["param"], "with_pieces");
  EXPECT_EQ(expect_error(post("/detokenize", {{"tokens", {97, 256}}}), 400)["param"], "tokens[1]");
  EXPECT_EQ(expect_error(post("/detokenize", {{"tokens", {-1}}}), 400)["param"], "tokens[0]");
  EXPECT_EQ(expect_error(post("/detokenize", {{"tokens", "ab"}}), 400)["param"], "tokens");
}

TEST_F(ToolsApi, ApplyTemplateReturnsThePromptText) {
  auto r = post("/apply-template", chat("hi"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j["prompt"], "<|user|>hi\n<|assistant|>");
  auto no_gen = post("/apply-template", chat("hi", {{"add_generation_prompt", false}}));
  EXPECT_EQ(no_gen.j["prompt"], "<|user|>hi\n");
  EXPECT_EQ(expect_error(post("/apply-template", {{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}), 400)["param"],
            "messages");
  EXPECT_EQ(backend_->generations(), 0);  // nothing was generated
}

TEST_F(ToolsApi, PropsDescribeTheServer) {
  auto r = request("GET", "/props");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j["default_generation_settings"]["n_ctx"], 1000);
  EXPECT_EQ(r.j["default_generation_settings"]["params"]["n_predict"], 500);
  EXPECT_EQ(r.j["total_slots"], 2);
  EXPECT_EQ(r.j["model_alias"], "ringlm-fake");
  EXPECT_EQ(r.j["ringlm"]["model_notice"], "a stand-in");
}

TEST_F(ToolsApi, NChoicesEachWithItsIndexAndSeed) {
  auto r = post("/v1/chat/completions", chat("q", {{"n", 3}, {"seed", 7}, {"max_tokens", 30}}));
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.j["choices"].size(), 3u);
  int completion = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.j["choices"][i]["index"], i);
    completion += static_cast<int>(r.j["choices"][i]["message"]["content"].get<std::string>().size());
  }
  EXPECT_NE(r.j["choices"][0]["message"]["content"], r.j["choices"][1]["message"]["content"]);  // seeds 7 and 8
  EXPECT_EQ(r.j["usage"]["completion_tokens"], completion);  // one token per byte
  // The same seed gives the same set; choice 0 is what n=1 with that seed gives.
  auto one = post("/v1/chat/completions", chat("q", {{"seed", 7}, {"max_tokens", 30}}));
  EXPECT_EQ(one.j["choices"][0]["message"]["content"], r.j["choices"][0]["message"]["content"]);
  for (int bad_n : {0, kMaxChoices + 1}) EXPECT_EQ(expect_error(post("/v1/chat/completions", chat("q", {{"n", bad_n}})), 400)["param"], "n");
  auto c = post("/v1/completions", {{"prompt", "x"}, {"n", 2}, {"max_tokens", 5}});
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.j["choices"].size(), 2u);
  EXPECT_EQ(c.j["choices"][1]["index"], 1);
}

TEST_F(ToolsApi, NChoicesStreamed) {
  auto r = post("/v1/chat/completions",
                chat("q", {{"n", 2}, {"stream", true}, {"max_tokens", 20}, {"stream_options", {{"include_usage", true}}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  std::string text[2];
  int finishes[2] = {0, 0}, done = 0, usage = 0;
  for (const auto& p : sse_payloads(r.body)) {
    if (p == "[DONE]") {
      ++done;
      continue;
    }
    json chunk = json::parse(p);
    if (chunk.contains("usage")) {
      ++usage;
      continue;
    }
    const int i = chunk["choices"][0]["index"];
    ASSERT_TRUE(i == 0 || i == 1) << p;
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("content")) text[i] += delta["content"].get<std::string>();
    if (!chunk["choices"][0]["finish_reason"].is_null()) ++finishes[i];
  }
  EXPECT_EQ(done, 1);
  EXPECT_EQ(usage, 1);
  EXPECT_EQ(finishes[0], 1);
  EXPECT_EQ(finishes[1], 1);
  for (const std::string& t : text) {  // 20 tokens; a character the last one splits is held back
    EXPECT_LE(t.size(), 20u);
    EXPECT_GE(t.size(), 17u);
  }
}

TEST_F(ToolsApi, MaxTokensAboveTheLimitIsClampedWithAHeader) {
  // Above --max-tokens (500): clamped to it.
  auto r = raw("POST", "/v1/chat/completions", {}, chat("x", {{"max_tokens", 100000}}).dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value(kMaxTokensClampedHeader), "requested=100000 used=500 limit=server");
  EXPECT_EQ(backend_->last_seen().params.max_tokens, 500);
  // A prompt of 900+ bytes leaves less than 200 tokens of the 1000-token context.
  const std::string long_prompt(900, 'a');
  const int room = 1000 - static_cast<int>(("<|user|>" + long_prompt + "\n<|assistant|>").size());
  auto c = raw("POST", "/v1/chat/completions", {}, chat(long_prompt, {{"max_tokens", 200}}).dump());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 200) << c->body;
  EXPECT_EQ(c->get_header_value(kMaxTokensClampedHeader),
            "requested=200 used=" + std::to_string(room) + " limit=context");
  // Within the limits: no header.
  auto fine = raw("POST", "/v1/chat/completions", {}, chat("x", {{"max_tokens", 5}}).dump());
  ASSERT_TRUE(fine);
  EXPECT_FALSE(fine->has_header(kMaxTokensClampedHeader));
  // A prompt that fills the context is still refused.
  EXPECT_EQ(expect_error(post("/v1/completions", {{"prompt", std::string(1000, 'a')}}), 400)["code"], "context_length_exceeded");
}

const json kWeatherTools = json::array({{{"type", "function"},
                                         {"function", {{"name", "get_weather"},
                                                       {"parameters", {{"type", "object"},
                                                                       {"properties", {{"city", {{"type", "string"}}}}}}}}}}});

TEST_F(ToolsApi, ParallelToolCallsFalseGivesOneCall) {
  auto two = post("/v1/chat/completions", chat("__two_calls__", {{"tools", kWeatherTools}}));
  ASSERT_EQ(two.status, 200) << two.body;
  EXPECT_EQ(two.j["choices"][0]["message"]["tool_calls"].size(), 2u);
  auto one = post("/v1/chat/completions", chat("__two_calls__", {{"tools", kWeatherTools}, {"parallel_tool_calls", false}}));
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.j["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(one.j["choices"][0]["finish_reason"], "tool_calls");
  // Streamed, likewise.
  auto s = post("/v1/chat/completions",
                chat("__two_calls__", {{"tools", kWeatherTools}, {"parallel_tool_calls", false}, {"stream", true}}));
  std::size_t calls = 0;
  for (const auto& p : sse_payloads(s.body))
    if (p != "[DONE]" && json::parse(p)["choices"][0]["delta"].contains("tool_calls"))
      calls += json::parse(p)["choices"][0]["delta"]["tool_calls"].size();
  EXPECT_EQ(calls, 1u);
  // tool_choice "required": the tool grammar itself allows one call only.
  auto req = post("/v1/chat/completions",
                  chat("__two_calls__", {{"tools", kWeatherTools}, {"tool_choice", "required"}, {"parallel_tool_calls", false}}));
  ASSERT_EQ(req.status, 200) << req.body;
  EXPECT_TRUE(backend_->last_seen().params.single_tool_call);
  EXPECT_EQ(req.j["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(expect_error(post("/v1/chat/completions", chat("x", {{"parallel_tool_calls", "no"}})), 400)["param"],
            "parallel_tool_calls");
}

TEST_F(ToolsApi, ReasoningEffortTurnsThinkingOnOrOff) {
  ASSERT_EQ(post("/v1/chat/completions", chat("x", {{"reasoning_effort", "high"}})).status, 200);
  EXPECT_TRUE(backend_->last_seen().enable_thinking);
  auto low = post("/v1/chat/completions", chat("x", {{"reasoning_effort", "low"}}));
  EXPECT_EQ(low.j["choices"][0]["message"]["reasoning_content"], "The fake backend thinks it over.");
  ASSERT_EQ(post("/v1/chat/completions", chat("x", {{"reasoning_effort", "none"}})).status, 200);
  EXPECT_FALSE(backend_->last_seen().enable_thinking);
  // enable_thinking, when given, wins.
  ASSERT_EQ(post("/v1/chat/completions", chat("x", {{"reasoning_effort", "high"}, {"enable_thinking", false}})).status, 200);
  EXPECT_FALSE(backend_->last_seen().enable_thinking);
  auto e = expect_error(post("/v1/chat/completions", chat("x", {{"reasoning_effort", "extreme"}})), 400);
  EXPECT_EQ(e["param"], "reasoning_effort");
  EXPECT_NE(e["message"].get<std::string>().find("extreme"), std::string::npos);
}

TEST_F(ToolsApi, CorsPreflightEchoesTheRequestedHeaders) {
  const std::string asked = "authorization, content-type, x-stainless-os, x-stainless-retry-count";
  auto r = raw("OPTIONS", "/v1/responses",
               {{"Origin", "http://app.example"}, {"Access-Control-Request-Method", "POST"},
                {"Access-Control-Request-Headers", asked}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "http://app.example");
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Headers"), asked);
  // Something that is not a list of header names is not echoed.
  auto odd = raw("OPTIONS", "/v1/chat/completions",
                 {{"Origin", "http://app.example"}, {"Access-Control-Request-Method", "POST"},
                  {"Access-Control-Request-Headers", "x-a, (evil)"}});
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->get_header_value("Access-Control-Allow-Headers"), "Authorization, Content-Type");
  // Another origin gets no grant.
  auto other = raw("OPTIONS", "/v1/chat/completions",
                   {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "POST"},
                    {"Access-Control-Request-Headers", asked}});
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->has_header("Access-Control-Allow-Headers"));
}

TEST_F(ToolsApi, GuidedReplyCutByALimitIsFlagged) {
  const json schema = {{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}}}, {"required", {"name"}}};
  const json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", schema}}}};
  auto cut = post("/v1/chat/completions", chat("x", {{"response_format", rf}, {"max_tokens", 4}}));
  ASSERT_EQ(cut.status, 200) << cut.body;
  const json& choice = cut.j["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(choice["error"]["code"], "output_truncated");
  EXPECT_EQ(choice["error"]["type"], "incomplete_output");
  EXPECT_TRUE(json::parse(choice["message"]["content"].get<std::string>(), nullptr, false).is_discarded());
  // Whole: no flag. Plain text cut by max_tokens: finish_reason only (text has no shape to break).
  auto whole = post("/v1/chat/completions", chat("x", {{"response_format", rf}}));
  EXPECT_FALSE(whole.j["choices"][0].contains("error")) << whole.body;
  auto plain = post("/v1/chat/completions", chat("x", {{"max_tokens", 4}}));
  EXPECT_EQ(plain.j["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(plain.j["choices"][0].contains("error"));
  // Streamed: the chunk with the finish reason carries it; json_object and completions too.
  auto s = post("/v1/chat/completions", chat("x", {{"response_format", {{"type", "json_object"}}}, {"max_tokens", 3}, {"stream", true}}));
  bool flagged = false;
  for (const auto& p : sse_payloads(s.body)) {
    if (p == "[DONE]") continue;
    const json c = json::parse(p)["choices"][0];
    if (c["finish_reason"] == "length") flagged = c.contains("error") && c["error"]["code"] == "output_truncated";
  }
  EXPECT_TRUE(flagged) << s.body;
  auto comp = post("/v1/completions", {{"prompt", "x"}, {"response_format", rf}, {"max_tokens", 2}});
  EXPECT_EQ(comp.j["choices"][0]["error"]["code"], "output_truncated") << comp.body;
  // A forced tool call cut short says "length", not "tool_calls".
  auto tool = post("/v1/chat/completions", chat("x", {{"tools", kWeatherTools}, {"tool_choice", "required"}, {"max_tokens", 5}}));
  EXPECT_EQ(tool.j["choices"][0]["finish_reason"], "length") << tool.body;
  EXPECT_EQ(tool.j["choices"][0]["error"]["code"], "output_truncated");
}

TEST_F(ToolsApi, FaviconIsServed) {
  auto r = request("GET", "/favicon.ico");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("<svg"), std::string::npos);
}

TEST(ToolsApiKey, UtilityRoutesNeedTheKey) {
  FakeBackend backend;
  ServerOptions so;
  so.host = "127.0.0.1";
  so.port = 0;
  so.api_key = "sekret";
  so.connection_rate_per_client = 0;
  HttpServer server(backend, so);
  const int port = server.start();
  httplib::Client c("127.0.0.1", port);
  for (const char* path : {"/tokenize", "/detokenize", "/apply-template", "/v1/responses"}) {
    auto r = c.Post(path, "{}", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << path;
  }
  auto props = c.Get("/props");
  ASSERT_TRUE(props);
  EXPECT_EQ(props->status, 401);
  auto ok = c.Post("/tokenize", {{"Authorization", "Bearer sekret"}}, R"({"content":"a"})", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  server.stop();
  server.wait();
}

}  // namespace
}  // namespace ringlm::server::testing
