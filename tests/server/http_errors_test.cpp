// Every failure a client can cause gets the right status and the OpenAI error shape.
#include "server_fixture.h"

namespace ringlm::server::testing {
namespace {

class HttpErrors : public ServerTest {
 protected:
  void SetUp() override {
    ServerOptions so;
    so.max_body = 64 * 1024;
    so.max_tokens = 500;
    FakeBackendOptions fo;
    fo.context_length = 1000;
    start(fo, so);
  }
};

TEST_F(HttpErrors, MalformedJsonIs400) {
  for (const char* body : {"{bad", "", "[1,2]", "\"text\"", "{\"messages\": [}"}) {
    auto e = expect_error(request("POST", "/v1/chat/completions", body), 400);
    EXPECT_EQ(e["type"], "invalid_request_error");
  }
}

TEST_F(HttpErrors, DeepNestingIs400NotACrash) {
  std::string deep = "{\"messages\":" + std::string(5000, '[') + std::string(5000, ']') + "}";
  auto e = expect_error(request("POST", "/v1/chat/completions", deep), 400);
  EXPECT_NE(e["message"].get<std::string>().find("deeper"), std::string::npos);
}

TEST_F(HttpErrors, WrongTypesNameTheField) {
  struct Case {
    json extra;
    const char* param;
  } cases[] = {
      {{{"temperature", "hot"}}, "temperature"},
      {{{"temperature", 3.5}}, "temperature"},
      {{{"top_p", 0}}, "top_p"},
      {{{"max_tokens", "ten"}}, "max_tokens"},
      {{{"max_tokens", 0}}, "max_tokens"},
      {{{"max_tokens", 2.5}}, "max_tokens"},
      {{{"seed", "x"}}, "seed"},
      {{{"stop", 5}}, "stop"},
      {{{"stop", {"a", 1}}}, "stop"},
      {{{"stream", "yes"}}, "stream"},
      {{{"n", 0}}, "n"},
      {{{"n", 17}}, "n"},
      {{{"reasoning_effort", "max"}}, "reasoning_effort"},
      {{{"parallel_tool_calls", 1}}, "parallel_tool_calls"},
      {{{"logprobs", 1}}, "logprobs"},
      {{{"top_logprobs", 21}, {"logprobs", true}}, "top_logprobs"},
      {{{"top_logprobs", 2}}, "top_logprobs"},
      {{{"response_format", "json"}}, "response_format"},
      {{{"response_format", {{"type", "xml"}}}}, "response_format.type"},
      {{{"response_format", {{"type", "json_schema"}}}}, "response_format.json_schema"},
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}}}}}}, "response_format.json_schema.schema"},
      {{{"tools", json::array({{{"type", "function"}}})}}, "tools[0].function"},
      {{{"tools", "all"}}, "tools"},
      {{{"tool_choice", "sometimes"}}, "tool_choice"},
      {{{"tool_choice", "required"}}, "tool_choice"},
      {{{"stream_options", 1}}, "stream_options"},
  };
  for (const auto& c : cases) {
    auto e = expect_error(post("/v1/chat/completions", chat("x", c.extra)), 400);
    EXPECT_EQ(e["param"], c.param) << c.extra.dump();
  }
  EXPECT_EQ(expect_error(post("/v1/chat/completions", json::object()), 400)["param"], "messages");
  EXPECT_EQ(expect_error(post("/v1/chat/completions", {{"messages", json::array()}}), 400)["param"], "messages");
  EXPECT_EQ(expect_error(post("/v1/chat/completions", {{"messages", {{{"content", "no role"}}}}}), 400)["param"], "messages[0].role");
  EXPECT_EQ(expect_error(post("/v1/completions", {{"prompt", 42}}), 400)["param"], "prompt");
  EXPECT_EQ(expect_error(post("/v1/completions", {{"prompt", {"a", "b"}}}), 400)["param"], "prompt");
  // null means "not given" (clients send it), and unknown fields are ignored.
  EXPECT_EQ(post("/v1/chat/completions", chat("x", {{"temperature", nullptr}, {"whatever", {1, 2}}})).status, 200);
}

TEST_F(HttpErrors, TemplateRejectionIs400OnMessages) {
  auto r = post("/v1/chat/completions", {{"messages", {{{"role", "wizard"}, {"content", "x"}}}}});
  EXPECT_EQ(expect_error(r, 400)["param"], "messages");
}

// max_tokens above --max-tokens or the context's room is clamped, as llama-server does (the
// header is checked in http_tools_api_test.cpp); a prompt that fills the context is refused.
TEST_F(HttpErrors, LengthLimits) {
  auto over_limit = post("/v1/chat/completions", chat("x", {{"max_tokens", 501}}));
  EXPECT_EQ(over_limit.status, 200) << over_limit.body;
  EXPECT_EQ(backend_->last_seen().params.max_tokens, 500);
  // 900-byte prompt + 200 > 1000-token context: the rest of the context.
  auto too_long = post("/v1/chat/completions", chat(std::string(900, 'a'), {{"max_tokens", 200}}));
  EXPECT_EQ(too_long.status, 200) << too_long.body;
  EXPECT_EQ(backend_->last_seen().params.max_tokens, 1000 - static_cast<int>(("<|user|>" + std::string(900, 'a') + "\n<|assistant|>").size()));
  auto full = expect_error(post("/v1/chat/completions", chat(std::string(1000, 'a'))), 400);
  EXPECT_EQ(full["code"], "context_length_exceeded");
  EXPECT_EQ(full["param"], "messages");
  EXPECT_EQ(expect_error(post("/v1/completions", {{"prompt", std::string(1000, 'a')}}), 400)["code"], "context_length_exceeded");
  // The same prompt with room left is fine.
  EXPECT_EQ(post("/v1/chat/completions", chat(std::string(900, 'a'), {{"max_tokens", 50}})).status, 200);
}

TEST_F(HttpErrors, OversizedBodyIs413) {
  json body = chat(std::string(70 * 1024, 'a'));
  auto e = expect_error(post("/v1/chat/completions", body), 413);
  EXPECT_EQ(e["code"], "body_too_large");
  // The server is still fine afterwards.
  EXPECT_EQ(post("/v1/chat/completions", chat("x")).status, 200);
}

// curl -d sends application/x-www-form-urlencoded. Without an API key that is refused (415)
// whatever its size, as browsers send it cross-origin without a preflight (browser_guard.h);
// the message names the fix.
TEST_F(HttpErrors, FormEncodedBodyIs415WithoutAKey) {
  httplib::Client c("127.0.0.1", port_);
  auto r = c.Post("/v1/chat/completions", chat("x").dump(), "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415);
  auto e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "unsupported_media_type");
  EXPECT_NE(e["message"].get<std::string>().find("Content-Type: application/json"), std::string::npos) << e["message"];
}

// With a key it is taken, and cpp-httplib caps such a body at 8 KiB by itself: the 413 must
// name that cap and the fix, not --max-body (which the body is far below).
TEST_F(HttpErrors, FormEncodedBodyOverTheLibraryCapNamesIt) {
  EXPECT_EQ(request("GET", "/health").status, 200);  // listening (a stop before that is lost by httplib)
  server_->stop();
  server_->wait();
  server_.reset();  // before start() replaces the backend it uses
  ServerOptions so;
  so.max_body = 64 * 1024;
  so.api_key = "k";
  start({}, so);
  httplib::Client c("127.0.0.1", port_);
  c.set_bearer_token_auth("k");
  auto r = c.Post("/v1/chat/completions", chat(std::string(20 * 1024, 'a')).dump(), "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  auto e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "body_too_large");
  EXPECT_NE(e["message"].get<std::string>().find("application/x-www-form-urlencoded is limited to 8192 bytes"), std::string::npos)
      << e["message"];
  EXPECT_NE(e["message"].get<std::string>().find("Content-Type: application/json"), std::string::npos);
}

TEST_F(HttpErrors, UnknownRouteIs404WrongMethodIs405) {
  EXPECT_EQ(expect_error(request("GET", "/v1/nothing"), 404)["code"], "not_found");
  EXPECT_EQ(expect_error(request("POST", "/v2/chat/completions", "{}"), 404)["code"], "not_found");
  EXPECT_EQ(expect_error(request("GET", "/v1/chat/completions"), 405)["code"], "method_not_allowed");
  EXPECT_EQ(expect_error(request("POST", "/v1/models", "{}"), 405)["code"], "method_not_allowed");
  EXPECT_EQ(expect_error(request("DELETE", "/health"), 405)["code"], "method_not_allowed");
}

TEST_F(HttpErrors, BackendFailureIs500) {
  auto e = expect_error(post("/v1/chat/completions", chat("__crash__")), 500);
  EXPECT_EQ(e["type"], "server_error");
  // The scheduler frees a slot before it delivers the job's answer (the 500 here), so no
  // waiting: the slot is free by the time the client has the reply.
  EXPECT_EQ(server_->scheduler().active(), 0);
  EXPECT_EQ(post("/v1/chat/completions", chat("fine")).status, 200);
}

}  // namespace
}  // namespace ringlm::server::testing
