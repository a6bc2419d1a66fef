// Gemma 4 reply parsing: thinking/content separation, tool-call parsing as the inverse of the
// chat template's serialisation (round trip through the real template), and streaming that
// agrees with whole-text parsing however the text is split.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "chat/gemma_reply.h"
#include "chat/jinja/template.h"
#include "util/error.h"

using ringlm::chat::GemmaReply;
using ringlm::chat::GemmaReplyStream;
using ringlm::chat::parse_gemma_reply;
using ringlm::chat::parse_gemma_value;
using ojson = nlohmann::ordered_json;

namespace {

std::string gemma_template_source() {
  std::ifstream in(std::string(RINGLM_TOKENIZER_DIR) + "/chat_template.jinja");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Key order is not part of the value (the template sorts keys).
nlohmann::json unordered(const ojson& j) { return nlohmann::json::parse(j.dump()); }

ojson random_value(std::mt19937& rng, int depth) {
  static const char* const kStrings[] = {"", "x", "hello world", "naïve 你好 😀", "a,b:c", "{braces}", "[x]",
                                         "quote \" and ' ", "line\nbreak", "back\\slash", "true", "12"};
  static const char* const kKeys[] = {"a", "B", "key_1", "location", "unit", "n", "Zed"};
  int kind = static_cast<int>(rng() % (depth > 2 ? 5 : 7));
  switch (kind) {
    case 0: return kStrings[rng() % std::size(kStrings)];
    case 1: return static_cast<std::int64_t>(rng() % 200000) - 100000;
    case 2: return (static_cast<double>(rng() % 100000) - 50000) / 64.0 + 0.5;
    case 3: return (rng() % 2) == 0;
    case 4: return nullptr;
    case 5: {
      ojson a = ojson::array();
      for (int i = static_cast<int>(rng() % 4); i > 0; --i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      ojson o = ojson::object();
      for (int i = static_cast<int>(rng() % 4); i > 0; --i) o[kKeys[rng() % std::size(kKeys)]] = random_value(rng, depth + 1);
      return o;
    }
  }
}

}  // namespace

TEST(GemmaReply, SeparatesThinkingFromContent) {
  GemmaReply r = parse_gemma_reply("<|channel>thought\nLet me add 2 and 2.\n<channel|>The answer is 4.");
  EXPECT_EQ(r.thinking, "Let me add 2 and 2.");
  EXPECT_EQ(r.content, "The answer is 4.");
  EXPECT_TRUE(r.tool_calls.empty());

  r = parse_gemma_reply("  Just an answer.\n");
  EXPECT_EQ(r.thinking, "");
  EXPECT_EQ(r.content, "Just an answer.");

  r = parse_gemma_reply("Hi<|channel>thought");
  EXPECT_EQ(r.thinking, "");
  EXPECT_EQ(r.content, "Hi");

  r = parse_gemma_reply("<|channel>thought\nstill thinking when the budget ran out");
  EXPECT_EQ(r.thinking, "still thinking when the budget ran out");
  EXPECT_EQ(r.content, "");
}

TEST(GemmaReply, ParsesToolCalls) {
  GemmaReply r = parse_gemma_reply(
      "<|channel>thought\nNeed weather.\n<channel|>"
      "<|tool_call>call:get_weather{location:<|\"|>Paris, FR<|\"|>,unit:<|\"|>celsius<|\"|>,days:3,"
      "hourly:false,extra:null,scale:1.5,tags:[<|\"|>a<|\"|>,<|\"|>b<|\"|>],opts:{deep:{x:-2}}}<tool_call|>"
      "<|tool_call>call:noop{}<tool_call|>");
  EXPECT_EQ(r.thinking, "Need weather.");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments.dump(),
            R"({"location":"Paris, FR","unit":"celsius","days":3,"hourly":false,"extra":null,"scale":1.5,)"
            R"("tags":["a","b"],"opts":{"deep":{"x":-2}}})");
  EXPECT_EQ(r.tool_calls[1].name, "noop");
  EXPECT_EQ(r.tool_calls[1].arguments, ojson::object());
}

TEST(GemmaReply, AcceptsJsonStyleArgumentsAndKeepsBrokenCallsAsContent) {
  GemmaReply r = parse_gemma_reply(R"(<|tool_call>call:f{"a": "x\"y", "b": [1, 2]}<tool_call|>)");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments.dump(), R"({"a":"x\"y","b":[1,2]})");

  r = parse_gemma_reply("before <|tool_call>call:f{a:<|\"|>unterminated}<tool_call|> after");
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "before <|tool_call>call:f{a:<|\"|>unterminated}<tool_call|> after");

  r = parse_gemma_reply("text <|tool_call>call:f{a:1");  // cut off by max_tokens
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "text <|tool_call>call:f{a:1");

  EXPECT_THROW(parse_gemma_value("{a:1,,}"), ringlm::Error);
  EXPECT_THROW(parse_gemma_value("[1,2"), ringlm::Error);
  EXPECT_THROW(parse_gemma_value("{a:1}}"), ringlm::Error);
  EXPECT_EQ(parse_gemma_value("[1 2, word]").dump(), R"(["1 2","word"])");  // unquoted text is kept as text
  EXPECT_THROW(parse_gemma_value(std::string(10000, '[')), ringlm::Error);
}

// Tool calls rendered by the real chat template parse back to the same name and arguments.
TEST(GemmaReply, RoundTripsTheChatTemplatesToolCallSerialisation) {
  ringlm::jinja::Template tmpl(gemma_template_source(), "chat_template.jinja");
  std::mt19937 rng(99);
  for (int iter = 0; iter < 300; ++iter) {
    ojson args = ojson::object();
    for (int i = static_cast<int>(rng() % 5); i > 0; --i)
      args["arg" + std::to_string(rng() % 6)] = random_value(rng, 1);
    ojson ctx = {{"messages", ojson::array({{{"role", "user"}, {"content", "hi"}},
                                             {{"role", "assistant"},
                                              {"tool_calls", ojson::array({{{"function", {{"name", "do_it"}, {"arguments", args}}}}})}}})},
                 {"bos_token", "<bos>"}};
    std::string text = tmpl.render(ctx);
    std::size_t start = text.find("<|tool_call>");
    std::size_t end = text.find("<tool_call|>");
    ASSERT_NE(start, std::string::npos) << text;
    GemmaReply r = parse_gemma_reply(text.substr(start, end + 12 - start));
    ASSERT_EQ(r.tool_calls.size(), 1u) << text;
    EXPECT_EQ(r.tool_calls[0].name, "do_it");
    EXPECT_EQ(unordered(r.tool_calls[0].arguments), unordered(args)) << text;
  }
}

TEST(GemmaReply, StreamingAgreesWithWholeTextForAnySplit) {
  const std::string reply =
      "<|channel>thought\nPlan: call the tool.\n<channel|>Sure, checking."
      "<|tool_call>call:lookup{q:<|\"|>x<tool|>y<|\"|>,n:2}<tool_call|>"
      "<|channel>thought\nmore<channel|>Done <|tool_ca but not a call.";
  GemmaReply whole = parse_gemma_reply(reply);
  ASSERT_EQ(whole.tool_calls.size(), 1u);
  EXPECT_EQ(whole.content, "Sure, checking.Done <|tool_ca but not a call.");
  EXPECT_EQ(whole.thinking, "Plan: call the tool.\nmore");
  std::mt19937 rng(5);
  for (int iter = 0; iter < 500; ++iter) {
    GemmaReplyStream stream;
    std::vector<GemmaReplyStream::Event> events;
    std::size_t pos = 0;
    while (pos < reply.size()) {
      std::size_t n = std::min<std::size_t>(1 + rng() % 7, reply.size() - pos);
      stream.push(std::string_view(reply).substr(pos, n), events);
      pos += n;
    }
    stream.finish(events);
    std::string content, thinking;
    int calls = 0;
    for (const auto& e : events) {
      if (e.kind == GemmaReplyStream::Event::Kind::Content) content += e.text;
      if (e.kind == GemmaReplyStream::Event::Kind::Thinking) thinking += e.text;
      if (e.kind == GemmaReplyStream::Event::Kind::ToolCall) {
        ++calls;
        EXPECT_EQ(e.tool_call.arguments.dump(), R"({"q":"x<tool|>y","n":2})");
      }
    }
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(content, "Sure, checking.Done <|tool_ca but not a call.");
    EXPECT_EQ(thinking, "Plan: call the tool.\nmore");
  }
}

// Without tool-call parsing (a request without tools, thinking on): only the thought channel
// is split off; tool-call text stays in the content verbatim, whatever the split.
TEST(GemmaReply, StreamWithoutToolCallsKeepsCallTextAsContent) {
  const std::string reply =
      "<|channel>thought\nweigh it<channel|>{\"a\":1}<|tool_call>call:f{x:1}<tool_call|> tail <|chan";
  std::mt19937 rng(9);
  for (int iter = 0; iter < 200; ++iter) {
    GemmaReplyStream stream(/*tool_calls=*/false);
    std::vector<GemmaReplyStream::Event> events;
    std::size_t pos = 0;
    while (pos < reply.size()) {
      std::size_t n = std::min<std::size_t>(1 + rng() % 5, reply.size() - pos);
      stream.push(std::string_view(reply).substr(pos, n), events);
      pos += n;
    }
    stream.finish(events);
    std::string content, thinking;
    for (const auto& e : events) {
      ASSERT_NE(e.kind, GemmaReplyStream::Event::Kind::ToolCall);
      (e.kind == GemmaReplyStream::Event::Kind::Content ? content : thinking) += e.text;
    }
    EXPECT_EQ(thinking, "weigh it");
    EXPECT_EQ(content, "{\"a\":1}<|tool_call>call:f{x:1}<tool_call|> tail <|chan");
  }
}
