// Reply grammars (reply_grammar.h): a free thought channel before the guided answer, and tool
// calls whose arguments follow the tool's parameter schema. Checked with a synthetic
// vocabulary that has the four marker tokens: what is accepted, what is refused, that quotes
// and braces inside a thought do not disturb the distinct-key filter, the thinking budget, and
// random walks whose answers (thought removed) validate.
#include <gtest/gtest.h>

#include <random>

#include "guided/reply_grammar.h"
#include "guided/validator.h"
#include "test_vocab.h"

namespace ringlm::guided {
namespace {

using testing::greedy_tokenize;
using testing::mask_has;

const std::string kOpen(1, char(marker::kChannelOpen)), kClose(1, char(marker::kChannelClose)),
    kCall(1, char(marker::kToolCallOpen)), kCallEnd(1, char(marker::kToolCallClose));

std::shared_ptr<const Vocabulary> marker_vocab() {
  auto base = testing::synthetic_vocab();
  std::vector<std::string> t;
  for (uint32_t id = 0; id + 2 < base->size(); ++id) {
    const std::string& b = base->bytes(id);
    t.push_back(b.size() == 1 && uint8_t(b[0]) >= marker::kFirst ? std::string() : b);  // as vocabulary_from_tokenizer
  }
  for (const std::string& m : {kOpen, kClose, kCall, kCallEnd}) t.push_back(m);
  for (const char* s : {"thought\n", "call:", "get_weather", "{\"a", "I think"}) t.push_back(s);
  t.push_back("");  // stop
  uint32_t eos = uint32_t(t.size() - 1);
  return std::make_shared<Vocabulary>(t, std::vector<uint32_t>{eos});
}

std::shared_ptr<GrammarIndex> index_of(Grammar g, std::shared_ptr<const Vocabulary> v) {
  return std::make_shared<GrammarIndex>(std::move(g), std::move(v));
}

// Token by token with mask/accept agreement; true when all accepted and the end accepts.
bool accepts(const std::shared_ptr<GrammarIndex>& idx, const std::string& text, int budget = 0) {
  Matcher m(idx);
  m.set_thinking_budget(budget);
  std::vector<uint32_t> mask(idx->vocab().mask_words());
  for (uint32_t tok : greedy_tokenize(idx->vocab(), text)) {
    m.fill_mask(mask.data());
    bool in = mask_has(mask, tok), ok = m.accept(tok);
    EXPECT_EQ(in, ok) << "mask and accept disagree in " << text;
    if (!ok) return false;
  }
  return m.is_accepting();
}

TEST(ReplyGrammar, ThoughtChannelThenAnswer) {
  auto v = marker_vocab();
  Json schema = Json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
  auto idx = index_of(with_thought_channel(compile_schema(schema).grammar, true), v);
  EXPECT_TRUE(accepts(idx, "{\"a\":1}"));  // thinking is optional
  EXPECT_TRUE(accepts(idx, kOpen + "thought\nI think {\"a\": \"x\"} \xC3\xA9" + kClose + "{\"a\":12}"));
  EXPECT_FALSE(accepts(idx, kOpen + "thought\nno answer" + kClose));
  EXPECT_FALSE(accepts(idx, kOpen + "thought\n" + kClose + "{\"a\":\"x\"}"));   // the answer is guided
  EXPECT_FALSE(accepts(idx, kOpen + "a" + kOpen + "b" + kClose + "{\"a\":1}"));  // no nested channel
  EXPECT_FALSE(accepts(idx, "{\"a\":1}" + kOpen + kClose));                     // no thought after it
  // Without thinking the markers are refused as before.
  auto plain = index_of(compile_schema(schema).grammar, v);
  EXPECT_FALSE(accepts(plain, kOpen + kClose + "{\"a\":1}"));
}

TEST(ReplyGrammar, ThoughtTextDoesNotDisturbDistinctKeys) {
  auto v = marker_vocab();
  // additionalProperties: keys from an infinite language, kept distinct by the key filter.
  Json schema = Json::parse(R"({"type":"object","additionalProperties":{"type":"integer"},"minProperties":2})");
  auto idx = index_of(with_thought_channel(compile_schema(schema).grammar, true), v);
  ASSERT_TRUE(idx->distinct_keys());
  const std::string thought = kOpen + "thought\n{\"a\":1,\"b\" and \"a\":2 \"" + kClose;
  EXPECT_TRUE(accepts(idx, thought + "{\"a\":1,\"b\":2}"));
  EXPECT_FALSE(accepts(idx, thought + "{\"a\":1,\"a\":2}"));
}

TEST(ReplyGrammar, ThinkingBudgetForcesTheClose) {
  auto v = marker_vocab();
  auto idx = index_of(with_thought_channel(compile_schema(Json::parse(R"({"const":1})")).grammar, true), v);
  EXPECT_TRUE(accepts(idx, kOpen + "ab" + kClose + "1", 2));
  EXPECT_FALSE(accepts(idx, kOpen + "xyz" + kClose + "1", 2));  // three thought tokens
  EXPECT_TRUE(accepts(idx, kOpen + "xyz" + kClose + "1", 0));
  Matcher m(idx);
  m.set_thinking_budget(1);
  std::vector<uint32_t> mask(v->mask_words());
  ASSERT_TRUE(m.accept(greedy_tokenize(*v, kOpen)[0]));
  ASSERT_TRUE(m.accept(greedy_tokenize(*v, "x")[0]));
  m.fill_mask(mask.data());
  int allowed = 0;
  for (uint32_t id = 0; id < v->size(); ++id) allowed += mask_has(mask, id);
  EXPECT_EQ(allowed, 1);
  EXPECT_TRUE(mask_has(mask, greedy_tokenize(*v, kClose)[0]));
  m.rollback(1);  // back inside the budget
  m.fill_mask(mask.data());
  EXPECT_TRUE(mask_has(mask, greedy_tokenize(*v, "x")[0]));
}

// parallel_tool_calls: false - exactly one call, of any of the tools, thinking first allowed.
TEST(ReplyGrammar, SingleToolCallGrammarAllowsOneCallOnly) {
  auto v = marker_vocab();
  Json time = Json::parse(R"({"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"],"additionalProperties":false})");
  std::vector<ToolGrammar> tools;
  tools.push_back({"get_time", compile_schema(time).grammar});
  auto idx = index_of(tool_call_grammar(std::move(tools), true, /*parallel=*/false), v);
  const std::string t = kCall + "call:get_time{\"tz\":\"UTC\"}" + kCallEnd;
  EXPECT_TRUE(accepts(idx, t));
  EXPECT_TRUE(accepts(idx, kOpen + "which one?" + kClose + t));
  EXPECT_FALSE(accepts(idx, t + t));
  EXPECT_FALSE(accepts(idx, ""));
  // After the call only the end is allowed: the close token leaves no call marker in the mask.
  Matcher m(idx);
  for (uint32_t tok : greedy_tokenize(*v, t)) ASSERT_TRUE(m.accept(tok));
  std::vector<uint32_t> mask(v->mask_words());
  m.fill_mask(mask.data());
  EXPECT_FALSE(mask_has(mask, greedy_tokenize(*v, kCall)[0]));
}

TEST(ReplyGrammar, ToolCallArgumentsFollowTheirSchema) {
  auto v = marker_vocab();
  Json weather = Json::parse(
      R"({"type":"object","properties":{"city":{"type":"string","maxLength":6},"unit":{"enum":["c","f"]}},"required":["city","unit"],"additionalProperties":false})");
  Json time = Json::parse(R"({"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"],"additionalProperties":false})");
  std::vector<ToolGrammar> tools;
  tools.push_back({"get_weather", compile_schema(weather).grammar});
  tools.push_back({"get_time", compile_schema(time).grammar});
  auto idx = index_of(tool_call_grammar(std::move(tools), true), v);
  const std::string w = kCall + "call:get_weather{\"city\":\"Paris\",\"unit\":\"c\"}" + kCallEnd;
  const std::string t = kCall + "call:get_time{\"tz\":\"UTC\"}" + kCallEnd;
  EXPECT_TRUE(accepts(idx, w));
  EXPECT_TRUE(accepts(idx, t));
  EXPECT_TRUE(accepts(idx, w + t));                               // parallel calls
  EXPECT_TRUE(accepts(idx, kOpen + "which one?" + kClose + w));   // thinking first
  EXPECT_FALSE(accepts(idx, kCall + "call:get_weather{\"city\":\"Paris\",\"unit\":\"k\"}" + kCallEnd));
  EXPECT_FALSE(accepts(idx, kCall + "call:get_weather{\"city\":\"Avignon\",\"unit\":\"c\"}" + kCallEnd));  // maxLength
  EXPECT_FALSE(accepts(idx, kCall + "call:get_time{\"city\":\"Paris\",\"unit\":\"c\"}" + kCallEnd));  // the other tool's args
  EXPECT_FALSE(accepts(idx, kCall + "call:get_date{\"tz\":\"UTC\"}" + kCallEnd));
  EXPECT_FALSE(accepts(idx, "{\"tz\":\"UTC\"}"));  // a bare value is not a call
  EXPECT_FALSE(accepts(idx, ""));

  // Random walks: every finished reply is calls whose arguments validate.
  auto idx2 = index_of(tool_call_grammar({{"get_weather", compile_schema(weather).grammar}}, false), v);
  Validator val(weather);
  std::mt19937 rng(5);
  int finished = 0;
  for (int run = 0; run < 60; ++run) {
    Matcher m(idx2);
    std::vector<uint32_t> mask(v->mask_words());
    std::string text;
    for (int step = 0; step < 200 && !m.is_stopped(); ++step) {
      m.fill_mask(mask.data());
      std::vector<uint32_t> allowed;
      for (uint32_t id = 0; id < v->size(); ++id)
        if (mask_has(mask, id)) allowed.push_back(id);
      ASSERT_FALSE(allowed.empty()) << "dead end after " << text;
      uint32_t tok = allowed[rng() % allowed.size()];
      if (v->is_stop(tok) || (m.is_accepting() && rng() % 2)) {
        if (!m.is_accepting()) continue;
        break;
      }
      ASSERT_TRUE(m.accept(tok));
      text += v->bytes(tok);
    }
    if (!m.is_accepting()) continue;
    ++finished;
    size_t pos = 0;
    while (pos < text.size()) {
      ASSERT_EQ(text.compare(pos, kCall.size() + 16, kCall + "call:get_weather"), 0) << text;
      size_t end = text.find(kCallEnd, pos);
      ASSERT_NE(end, std::string::npos);
      std::string args = text.substr(pos + kCall.size() + 16, end - pos - kCall.size() - 16);
      std::string why;
      EXPECT_TRUE(val.validate(Json::parse(args), &why)) << args << ": " << why;
      pos = end + kCallEnd.size();
    }
  }
  EXPECT_GT(finished, 10);
}

}  // namespace
}  // namespace ringlm::guided
