// POST /v1/responses (the OpenAI Responses API, stateless): the request translated to a chat
// request (what the backend sees), the output items, the streamed event sequence, a function
// call round trip as Codex makes it, and the refusals by name.
#include "server/responses_request.h"
#include "server_fixture.h"

namespace ringlm::server::testing {
namespace {

class ResponsesApi : public ServerTest {
 protected:
  void SetUp() override {
    FakeBackendOptions fo;
    fo.token_delay = std::chrono::microseconds(0);
    start(fo);
  }

  // Events of a Responses stream: (event name, data object) in order.
  static std::vector<std::pair<std::string, json>> events(const std::string& body) {
    std::vector<std::pair<std::string, json>> out;
    std::size_t pos = 0;
    while (pos < body.size()) {
      std::size_t end = body.find("\n\n", pos);
      if (end == std::string::npos) end = body.size();
      const std::string ev = body.substr(pos, end - pos);
      pos = end + 2;
      const std::size_t nl = ev.find('\n');
      if (ev.rfind("event: ", 0) != 0 || nl == std::string::npos || ev.compare(nl + 1, 6, "data: ") != 0) {
        ADD_FAILURE() << "not an event: " << ev;
        continue;
      }
      out.emplace_back(ev.substr(7, nl - 7), json::parse(ev.substr(nl + 7)));
    }
    return out;
  }
};

const json kTools = json::array({{{"type", "function"},
                                  {"name", "get_weather"},
                                  {"description", "weather"},
                                  {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}});

TEST_F(ResponsesApi, StringInputGivesOneMessageItem) {
  auto r = post("/v1/responses", {{"model", "ringlm-fake"}, {"input", "hello"}, {"instructions", "Be brief."},
                                  {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.j["object"], "response");
  EXPECT_EQ(r.j["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(r.j["status"], "completed");
  EXPECT_EQ(r.j["instructions"], "Be brief.");
  EXPECT_EQ(r.j["store"], false);
  ASSERT_EQ(r.j["output"].size(), 1u);
  const json& item = r.j["output"][0];
  EXPECT_EQ(item["type"], "message");
  EXPECT_EQ(item["role"], "assistant");
  EXPECT_EQ(item["status"], "completed");
  EXPECT_EQ(item["content"][0]["type"], "output_text");
  EXPECT_EQ(item["content"][0]["text"].get<std::string>().rfind("Fake reply:", 0), 0u);
  EXPECT_EQ(r.j["usage"]["output_tokens"], item["content"][0]["text"].get<std::string>().size());
  EXPECT_EQ(r.j["usage"]["total_tokens"], r.j["usage"]["input_tokens"].get<int>() + r.j["usage"]["output_tokens"].get<int>());
  // instructions are the first (system) message.
  const json msgs = backend_->last_seen().messages;
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0], json({{"role", "system"}, {"content", "Be brief."}}));
  EXPECT_EQ(msgs[1], json({{"role", "user"}, {"content", "hello"}}));
}

TEST_F(ResponsesApi, JsonSchemaFormatGivesParseableJson) {
  const json schema = {{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}, {"age", {{"type", "integer"}}}}},
                       {"required", {"name", "age"}}};
  auto r = post("/v1/responses", {{"input", json::array({{{"role", "user"}, {"content", "Ada, 36"}}})},
                                  {"text", {{"format", {{"type", "json_schema"}, {"name", "p"}, {"schema", schema}, {"strict", true}}}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(backend_->last_seen().params.json_schema, schema.dump());
  const json value = json::parse(r.j["output"][0]["content"][0]["text"].get<std::string>());
  EXPECT_TRUE(value["age"].is_number_integer());
  EXPECT_EQ(r.j["text"]["format"]["type"], "json_schema");
  // Cut by max_output_tokens: status incomplete, the reason given.
  auto cut = post("/v1/responses", {{"input", "x"}, {"max_output_tokens", 3},
                                    {"text", {{"format", {{"type", "json_schema"}, {"name", "p"}, {"schema", schema}}}}}});
  ASSERT_EQ(cut.status, 200) << cut.body;
  EXPECT_EQ(cut.j["status"], "incomplete");
  EXPECT_EQ(cut.j["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(cut.j["output"][0]["status"], "incomplete");
}

TEST_F(ResponsesApi, FunctionCallRoundTrip) {
  auto r = post("/v1/responses", {{"input", "weather in Paris?"}, {"tools", kTools}});
  ASSERT_EQ(r.status, 200) << r.body;
  // Flat Responses tools reach the template as chat tools.
  EXPECT_EQ(backend_->last_seen().tools[0]["function"]["name"], "get_weather");
  ASSERT_EQ(r.j["output"].size(), 1u) << r.body;
  const json call = r.j["output"][0];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(call["status"], "completed");
  EXPECT_TRUE(json::parse(call["arguments"].get<std::string>()).is_object());
  ASSERT_TRUE(call["call_id"].is_string());
  // The next turn sends the call and its output back (store: false, as Codex does).
  json input = json::array({{{"type", "message"}, {"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "weather in Paris?"}}}}},
                            {{"type", "reasoning"}, {"id", "rs_1"}, {"summary", json::array()}},
                            call,
                            {{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "sunny"}}});
  auto r2 = post("/v1/responses", {{"input", input}, {"store", false}, {"max_output_tokens", 20}});
  ASSERT_EQ(r2.status, 200) << r2.body;
  const json msgs = backend_->last_seen().messages;
  ASSERT_EQ(msgs.size(), 3u) << msgs.dump();
  EXPECT_EQ(msgs[0]["content"], "weather in Paris?");
  EXPECT_EQ(msgs[1]["role"], "assistant");
  EXPECT_EQ(msgs[1]["tool_calls"][0]["id"], call["call_id"]);
  EXPECT_EQ(msgs[1]["tool_calls"][0]["function"]["arguments"], json::parse(call["arguments"].get<std::string>()));
  EXPECT_EQ(msgs[2], json({{"role", "tool"}, {"tool_call_id", call["call_id"]}, {"content", "sunny"}, {"name", "get_weather"}}));
  EXPECT_EQ(r2.j["output"][0]["type"], "message");
}

TEST_F(ResponsesApi, StreamedEventsInOrder) {
  // temperature 0: the fake's words are fixed, so the 30-byte cut does not split a
  // multi-byte character (a seeded draw did, now and then, and the held-back bytes made 28).
  auto r = post("/v1/responses", {{"input", "hi"}, {"stream", true}, {"max_output_tokens", 30}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto evs = events(r.body);
  ASSERT_GE(evs.size(), 8u);
  std::vector<std::string> names;
  std::string text;
  for (std::size_t i = 0; i < evs.size(); ++i) {
    EXPECT_EQ(evs[i].second["type"], evs[i].first);
    EXPECT_EQ(evs[i].second["sequence_number"], i);
    if (evs[i].first == "response.output_text.delta") text += evs[i].second["delta"].get<std::string>();
    else names.push_back(evs[i].first);
  }
  const std::vector<std::string> expected = {"response.created",          "response.in_progress",
                                             "response.output_item.added", "response.content_part.added",
                                             "response.output_text.done",  "response.content_part.done",
                                             "response.output_item.done",  "response.incomplete"};
  EXPECT_EQ(names, expected);  // 30 tokens cut the fake's reply: incomplete
  EXPECT_EQ(text.size(), 30u);
  const json& last = evs.back().second["response"];
  EXPECT_EQ(last["output"][0]["content"][0]["text"], text);
  EXPECT_EQ(last["usage"]["output_tokens"], 30);
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
}

TEST_F(ResponsesApi, StreamedFunctionCallAndReasoning) {
  auto r = post("/v1/responses", {{"input", "hi"}, {"stream", true}, {"tools", kTools}});
  std::string args;
  bool completed = false;
  for (const auto& [name, data] : events(r.body)) {
    if (name == "response.function_call_arguments.done") args = data["arguments"];
    if (name == "response.completed") completed = data["response"]["output"][0]["type"] == "function_call";
  }
  EXPECT_TRUE(json::parse(args).is_object()) << r.body;
  EXPECT_TRUE(completed) << r.body;
  // Thinking (reasoning.effort): a reasoning item before the message.
  auto t = post("/v1/responses", {{"input", "hi"}, {"stream", true}, {"reasoning", {{"effort", "medium"}}}});
  std::string thought;
  json final_output;
  for (const auto& [name, data] : events(t.body)) {
    if (name == "response.reasoning_text.delta") thought += data["delta"].get<std::string>();
    if (name == "response.completed") final_output = data["response"]["output"];
  }
  EXPECT_EQ(thought, "The fake backend thinks it over.");
  ASSERT_EQ(final_output.size(), 2u) << t.body;
  EXPECT_EQ(final_output[0]["type"], "reasoning");
  EXPECT_EQ(final_output[1]["type"], "message");
  EXPECT_EQ(final_output[1]["content"][0]["text"].get<std::string>().find("think"), std::string::npos);
}

TEST_F(ResponsesApi, RefusalsNameTheField) {
  EXPECT_EQ(expect_error(post("/v1/responses", {{"input", "x"}, {"previous_response_id", "resp_1"}}), 400)["param"],
            "previous_response_id");
  EXPECT_EQ(expect_error(post("/v1/responses", {{"model", "m"}}), 400)["param"], "input");
  EXPECT_EQ(expect_error(post("/v1/responses", {{"input", "x"}, {"tools", {{{"type", "web_search"}}}}}), 400)["param"],
            "tools[0].type");
  EXPECT_EQ(expect_error(post("/v1/responses", {{"input", {{{"type", "item_reference"}, {"id", "x"}}}}}), 400)["param"],
            "input[0].type");
  EXPECT_EQ(expect_error(post("/v1/responses", {{"input", {{{"type", "function_call"}, {"name", "f"}}}}}), 400)["param"],
            "input[0].call_id");
  EXPECT_EQ(expect_error(post("/v1/responses", {{"input", "x"}, {"text", {{"format", {{"type", "yaml"}}}}}}), 400)["param"],
            "text.format.type");
  EXPECT_EQ(expect_error(post("/v1/responses", {{"input", "x"}, {"reasoning", {{"effort", "max"}}}}), 400)["param"],
            "reasoning_effort");
}

TEST(ResponsesRequest, TranslatesToAChatBody) {
  const json body = {{"model", "m"},
                     {"input", json::array({{{"role", "developer"}, {"content", "rules"}},
                                            {{"role", "user"},
                                             {"content", {{{"type", "input_text"}, {"text", "look"}},
                                                          {{"type", "input_image"}, {"image_url", "data:image/png;base64,AA"}}}}},
                                            {{"type", "function_call"}, {"call_id", "c1"}, {"name", "f"}, {"arguments", "{}"}},
                                            {{"type", "function_call"}, {"call_id", "c2"}, {"name", "g"}, {"arguments", "{}"}}})},
                     {"max_output_tokens", 9},
                     {"tool_choice", {{"type", "function"}, {"name", "f"}}},
                     {"parallel_tool_calls", false}};
  const ResponsesRequest r = translate_responses_request(body);
  const json& m = r.chat_body["messages"];
  ASSERT_EQ(m.size(), 3u) << r.chat_body.dump();
  EXPECT_EQ(m[0]["role"], "developer");
  EXPECT_EQ(m[1]["content"][1], json({{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,AA"}}}}));
  EXPECT_EQ(m[2]["tool_calls"].size(), 2u);  // calls made together: one assistant turn
  EXPECT_EQ(r.chat_body["max_tokens"], 9);
  EXPECT_EQ(r.chat_body["tool_choice"]["type"], "function");
  EXPECT_EQ(r.chat_body["tool_choice"]["function"]["name"], "f");
  EXPECT_EQ(r.chat_body["parallel_tool_calls"], false);
  EXPECT_EQ(r.echo["parallel_tool_calls"], false);
  EXPECT_TRUE(r.echo["tools"].is_array() && r.echo["tools"].empty()) << r.echo.dump();
}

}  // namespace
}  // namespace ringlm::server::testing
