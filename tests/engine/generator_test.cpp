// Generator behaviour on a tiny random-weight model: KV reuse must be invisible in the output
// (same tokens as a fresh session), and every way a generation ends must be reported.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "chat/gemma_reply.h"
#include "engine/generator.h"
#include "guided/validator.h"
#include "model/testing/test_checkpoint.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ringlm;

namespace {

const fs::path& tiny_model_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("ringlm_generator_test_" + std::to_string(::getpid()));
    model::testing::TestCheckpointOptions o;
    o.preset = "tiny";
    o.seed = 11;
    o.tokenizer_dir = fs::path(RINGLM_TOKENIZER_DIR);  // chat template only
    model::testing::write_test_checkpoint(d, o);
    return d;
  }();
  return dir;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("ringlm_generator_test_" + std::to_string(::getpid())), ec);
  }
} cleanup;

engine::Engine& shared_engine() {
  static engine::Engine e({.model_dir = tiny_model_dir(), .weights = model::WeightFormat::stored});
  return e;
}

std::vector<std::int32_t> prompt_of(std::size_t n, int salt) {
  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i < n; ++i) ids.push_back(static_cast<std::int32_t>(300 + (i * 37 + salt * 11) % 400));
  return ids;
}

engine::GenerationParams greedy(int n) {
  engine::GenerationParams p;
  p.max_tokens = n;
  p.ignore_stop_ids = true;
  return p;
}

std::vector<std::int32_t> tokens_of(engine::Generator& g, std::span<const std::int32_t> prompt, int n,
                                    engine::GenerationResult* out = nullptr) {
  std::vector<std::int32_t> ids;
  auto r = g.generate(prompt, greedy(n), [&](const engine::TokenEvent& e) {
    if (e.id >= 0) ids.push_back(e.id);
    return true;
  });
  if (out) *out = r;
  return ids;
}

}  // namespace

TEST(Generator, ReusedPrefixGivesTheSameTokensAsAFreshSession) {
  auto& engine = shared_engine();
  engine::Generator warm(engine), fresh(engine);
  auto p1 = prompt_of(70, 1);
  auto first = tokens_of(warm, p1, 12);
  ASSERT_EQ(first.size(), 12u);
  // Next turn: the old prompt, the reply, then new text (as a chat continues).
  auto p2 = p1;
  p2.insert(p2.end(), first.begin(), first.end());
  auto extra = prompt_of(30, 2);
  p2.insert(p2.end(), extra.begin(), extra.end());
  engine::GenerationResult r;
  auto reused = tokens_of(warm, p2, 20, &r);
  // The last sampled token of the first reply was never fed to the model.
  EXPECT_EQ(r.cached_prompt_tokens, static_cast<int>(p1.size() + first.size() - 1));
  EXPECT_EQ(reused, tokens_of(fresh, p2, 20));
}

TEST(Generator, ShortRollbackTruncatesInsteadOfRecomputing) {
  auto& engine = shared_engine();
  engine::Generator g(engine), fresh(engine);
  auto p1 = prompt_of(50, 3);
  tokens_of(g, p1, 4);
  auto p2 = p1;
  p2.resize(45);
  auto tail = prompt_of(10, 4);
  p2.insert(p2.end(), tail.begin(), tail.end());
  engine::GenerationResult r;
  auto got = tokens_of(g, p2, 10, &r);
  EXPECT_EQ(r.cached_prompt_tokens, 45);
  EXPECT_EQ(got, tokens_of(fresh, p2, 10));
}

TEST(Generator, PinnedPrefixSurvivesGenerationsLongerThanTheRing) {
  auto& engine = shared_engine();
  engine::Generator g(engine), fresh(engine);
  auto prefix = prompt_of(40, 5);
  g.pin_prefix(prefix);
  for (int row = 0; row < 3; ++row) {
    auto prompt = prefix;
    auto rest = prompt_of(20 + row * 7, 10 + row);
    prompt.insert(prompt.end(), rest.begin(), rest.end());
    engine::GenerationResult r;
    // 120 generated tokens overwrite the 16 + 64 slot sliding ring completely.
    auto got = tokens_of(g, prompt, 120, &r);
    // Every row reuses exactly the pinned prefix (restored from the snapshot after row 0).
    EXPECT_EQ(r.cached_prompt_tokens, 40) << "row " << row;
    fresh.reset();
    EXPECT_EQ(got, tokens_of(fresh, prompt, 120)) << "row " << row;
  }
}

TEST(Generator, CancelLengthAndStopStringsEndTheRun) {
  auto& engine = shared_engine();
  engine::Generator g(engine);
  auto prompt = prompt_of(20, 6);
  int seen = 0;
  auto r = g.generate(prompt, greedy(50), [&](const engine::TokenEvent&) { return ++seen < 3; });
  EXPECT_EQ(r.finish, engine::FinishReason::Cancelled);
  EXPECT_EQ(r.completion_tokens, 3);

  auto full = g.generate(prompt, greedy(24), nullptr);
  EXPECT_EQ(full.finish, engine::FinishReason::Length);
  EXPECT_EQ(full.completion_tokens, 24);
  ASSERT_GE(full.text.size(), 12u);
  // A stop string taken from the middle of the reply ends it there, unemitted.
  const std::size_t at = full.text.size() / 2;
  const std::string stop = full.text.substr(at, 3);
  auto p = greedy(24);
  p.stop = {stop};
  std::string streamed;
  auto s = g.generate(prompt, p, [&](const engine::TokenEvent& e) {
    streamed += e.text;
    return true;
  });
  EXPECT_EQ(s.finish, engine::FinishReason::Stop);
  EXPECT_EQ(s.text, full.text.substr(0, full.text.find(stop)));
  EXPECT_EQ(streamed, s.text);
}

TEST(Generator, BadPromptsAreErrorsAndTheSessionStaysUsable) {
  auto& engine = shared_engine();
  engine::Generator g(engine, {.context_tokens = 128});
  EXPECT_THROW(g.generate({}, greedy(4), nullptr), Error);
  std::vector<std::int32_t> bad = {5, 999999};
  EXPECT_THROW(g.generate(bad, greedy(4), nullptr), Error);
  EXPECT_THROW(g.generate(prompt_of(200, 7), greedy(4), nullptr), Error);
  auto r = g.generate(prompt_of(100, 8), greedy(60), nullptr);
  EXPECT_EQ(r.finish, engine::FinishReason::Length) << "the context filled up";
  EXPECT_LE(r.completion_tokens, 28);
  EXPECT_EQ(g.generate(prompt_of(10, 9), greedy(5), nullptr).completion_tokens, 5);
}

TEST(Generator, GuidedOutputFollowsTheSchemaAndStopsAtItsEnd) {
  auto& engine = shared_engine();
  engine::Generator g(engine);
  const std::string schema = R"({"type":"object","properties":{"a":{"enum":["x","yy"]},"b":{"type":"integer","minimum":-5,"maximum":300}},"required":["a","b"],"additionalProperties":false})";
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    engine::GenerationParams p;
    p.max_tokens = 200;
    p.json_schema = schema;
    p.sampling.temperature = 1.0f;
    p.sampling.seed = seed;
    auto r = g.generate(prompt_of(12, 10), p, nullptr);
    ASSERT_EQ(r.finish, engine::FinishReason::Stop) << r.text;
    auto v = nlohmann::json::parse(r.text);
    EXPECT_TRUE(v["a"] == "x" || v["a"] == "yy") << r.text;
    EXPECT_TRUE(v["b"].is_number_integer() && v["b"] >= -5 && v["b"] <= 300) << r.text;
    EXPECT_EQ(v.size(), 2u);
  }
  engine::GenerationParams bad;
  bad.json_schema = "{not json";
  EXPECT_THROW(g.generate(prompt_of(5, 1), bad, nullptr), Error);
}

namespace {

struct GuidedRun {
  engine::GenerationResult result;
  std::vector<engine::TokenEvent> events;
};

GuidedRun guided_run(engine::Generator& g, const std::string& schema, float temperature, std::uint64_t seed,
               engine::HeadSubsetPolicy::Mode mode) {
  g.set_head_subset({.mode = mode});
  engine::GenerationParams p;
  p.max_tokens = 120;
  p.json_schema = schema;
  p.sampling.temperature = temperature;
  p.sampling.top_p = temperature > 0 && seed % 2 ? 0.9f : 1.0f;
  p.sampling.seed = seed;
  p.logprobs = true;
  p.top_logprobs = 5;
  GuidedRun run;
  run.result = g.generate(prompt_of(15, static_cast<int>(seed) + 20), p, [&](const engine::TokenEvent& e) {
    run.events.push_back(e);
    return true;
  });
  return run;
}

}  // namespace

TEST(Generator, SubsetLmHeadGivesTheSameTokensAndLogprobsAsTheFullHead) {
  // Enum-heavy, with a free string (whose steps allow most of the vocabulary).
  const std::string schema = R"({"type":"object","properties":{
    "color":{"enum":["red","green","blue","cyan","magenta"]},"size":{"enum":["S","M","L","XL"]},
    "n":{"type":"integer","minimum":0,"maximum":99},
    "tags":{"type":"array","items":{"enum":["alpha","beta","gamma"]},"maxItems":3},
    "note":{"type":"string","maxLength":6}},
    "required":["color","size","n","tags","note"],"additionalProperties":false})";
  engine::Engine q4(engine::EngineOptions{.model_dir = tiny_model_dir(), .weights = model::WeightFormat::q4_0});
  using Mode = engine::HeadSubsetPolicy::Mode;
  for (engine::Engine* e : {&shared_engine(), &q4}) {
    engine::Generator g(*e);
    const bool grouped = g.session().head_row_granularity() == 16;
    EXPECT_EQ(grouped, e == &q4);
    for (auto [temperature, seed] : std::vector<std::pair<float, std::uint64_t>>{{0.0f, 0}, {1.0f, 1}, {1.0f, 2}, {1.0f, 3}}) {
      const std::string what = std::string(grouped ? "q4_0" : "stored") + " T=" + std::to_string(temperature) +
                               " seed " + std::to_string(seed);
      const GuidedRun full = guided_run(g, schema, temperature, seed, Mode::Never);
      ASSERT_EQ(full.result.finish, engine::FinishReason::Stop) << what << ": " << full.result.text;
      EXPECT_NO_THROW((void)nlohmann::json::parse(full.result.text)) << full.result.text;
      EXPECT_GT(full.result.guided_steps, 5) << what;
      EXPECT_EQ(full.result.subset_head_steps, 0) << what;
      for (Mode mode : {Mode::Always, Mode::Auto}) {
        const GuidedRun sub = guided_run(g, schema, temperature, seed, mode);
        EXPECT_EQ(sub.result.text, full.result.text) << what;
        EXPECT_EQ(sub.result.guided_steps, full.result.guided_steps) << what;
        if (mode == Mode::Always) EXPECT_EQ(sub.result.subset_head_steps, sub.result.guided_steps) << what;
        // The enum and digit steps allow few tokens; the free-string steps allow most.
        if (mode == Mode::Auto) {
          EXPECT_GT(sub.result.subset_head_steps, 0) << what;
          EXPECT_LT(sub.result.subset_head_steps, sub.result.guided_steps) << what;
        }
        ASSERT_EQ(sub.events.size(), full.events.size()) << what;
        for (std::size_t i = 0; i < sub.events.size(); ++i) {
          const auto &a = sub.events[i], &b = full.events[i];
          ASSERT_EQ(a.id, b.id) << what << " token " << i;
          EXPECT_EQ(a.logprob, b.logprob) << what << " token " << i;
          ASSERT_EQ(a.top.size(), b.top.size()) << what << " token " << i;
          for (std::size_t k = 0; k < a.top.size(); ++k) {
            EXPECT_EQ(a.top[k].id, b.top[k].id) << what << " token " << i;
            EXPECT_EQ(a.top[k].logprob, b.top[k].logprob) << what << " token " << i;
          }
        }
      }
    }
  }
}

// Thinking on + schema (issue #16): the model thinks freely inside the thought channel and the
// grammar applies from the answer on. The random-weight model rarely opens the channel, so
// seeds are tried until one does (the first step allows `<|channel>` beside the answer's first
// tokens); the thinking budget then closes it after 3 tokens, and the answer must validate.
TEST(Generator, ThoughtChannelThenGuidedAnswer) {
  auto& engine = shared_engine();
  engine::Generator g(engine);
  const std::string schema = R"({"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer","minimum":0,"maximum":9}},"required":["ok","n"],"additionalProperties":false})";
  int thoughts = 0, direct = 0;
  for (std::uint64_t seed = 0; seed < 60 && thoughts == 0; ++seed) {
    engine::GenerationParams p;
    p.max_tokens = 60;
    p.json_schema = schema;
    p.guided_thinking = true;
    p.thinking_budget = 3;
    p.sampling.temperature = 3.0f;
    p.sampling.seed = seed;
    auto r = g.generate(prompt_of(8, 3), p, nullptr);
    ASSERT_EQ(r.finish, engine::FinishReason::Stop) << r.text;
    chat::GemmaReply reply = chat::parse_gemma_reply(r.text);
    auto v = nlohmann::json::parse(reply.content);  // the answer, thought removed
    EXPECT_TRUE(v["ok"].is_boolean() && v["n"].is_number_integer() && v["n"] >= 0 && v["n"] <= 9) << r.text;
    EXPECT_EQ(v.size(), 2u) << r.text;
    if (r.text.rfind("<|channel>", 0) == 0) {
      ++thoughts;
      const auto close = r.text.find("<channel|>");
      ASSERT_NE(close, std::string::npos) << r.text;
      EXPECT_EQ(r.text.find("<|channel>", 1), std::string::npos) << r.text;  // one channel
      EXPECT_EQ(r.text.substr(close + 10), reply.content) << r.text;         // the answer follows it
    } else {
      ++direct;
      EXPECT_EQ(r.text, reply.content);
    }
  }
  EXPECT_EQ(thoughts, 1) << "no seed opened the thought channel";
}

// tool_choice required / named (issue #16): the reply is a tool call whose arguments follow the
// tool's parameter schema.
TEST(Generator, ToolCallArgumentsFollowTheToolSchema) {
  auto& engine = shared_engine();
  engine::Generator g(engine);
  const nlohmann::json params = nlohmann::json::parse(
      R"({"type":"object","properties":{"city":{"type":"string","maxLength":10},"unit":{"enum":["c","f"]}},"required":["city","unit"],"additionalProperties":false})");
  const nlohmann::json tools = {{{"name", "get_weather"}, {"parameters", params}}};
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    engine::GenerationParams p;
    p.max_tokens = 120;
    p.tool_schemas = tools.dump();
    p.sampling.temperature = 1.0f;
    p.sampling.seed = seed;
    auto r = g.generate(prompt_of(8, 4), p, nullptr);
    // The grammar allows parallel calls, so a random model may still be calling at max_tokens:
    // then the unfinished last call is left as content; every finished one must validate.
    chat::GemmaReply reply = chat::parse_gemma_reply(r.text);
    ASSERT_GE(reply.tool_calls.size(), 1u) << r.text;
    if (r.finish == engine::FinishReason::Length) reply.content.clear();
    EXPECT_EQ(r.text.rfind("<|tool_call>call:get_weather{", 0), 0u) << r.text;
    for (const auto& call : reply.tool_calls) {
      EXPECT_EQ(call.name, "get_weather");
      std::string why;
      EXPECT_TRUE(guided::Validator(guided::Json::parse(params.dump())).validate(guided::Json::parse(call.arguments.dump()), &why))
          << call.arguments.dump() << ": " << why;
    }
    EXPECT_TRUE(reply.content.empty()) << r.text;
  }
}
