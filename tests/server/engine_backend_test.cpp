// The Backend contract (what the HTTP layer relies on) checked on the real engine over a tiny
// random-weight model with the Gemma 4 chat template.
#include <gtest/gtest.h>
#include <unistd.h>

#include <httplib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <chrono>
#include <thread>

#include "model/testing/test_assistant.h"
#include "model/testing/test_checkpoint.h"
#include "server/engine_backend.h"
#include "server/http_server.h"
#include "backend_contract.h"

namespace fs = std::filesystem;

TEST(EngineBackend, MeetsTheBackendContract) {
  const fs::path dir = fs::temp_directory_path() / ("ringlm_engine_backend_" + std::to_string(::getpid()));
  ringlm::model::testing::TestCheckpointOptions o;
  o.preset = "tiny";
  o.seed = 4;
  o.tokenizer_dir = fs::path(RINGLM_TOKENIZER_DIR);
  ringlm::model::testing::write_test_checkpoint(dir, o);
  {
    ringlm::server::BackendOptions bo;
    bo.engine.model_dir = dir;
    bo.engine.context_tokens = 1024;
    bo.slots = 2;
    auto backend = ringlm::server::make_engine_backend(bo);
    EXPECT_EQ(backend->slots(), 2);
    EXPECT_EQ(backend->context_length(), 1024);
    ringlm::server::testing::check_backend_contract(*backend);
    // A Gemma tool call in the reply text becomes a structured call.
    auto parsed = backend->parse_reply("<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>");
    ASSERT_EQ(parsed.tool_calls.size(), 1u);
    EXPECT_EQ(parsed.tool_calls[0].name, "get_weather");
    EXPECT_EQ(parsed.tool_calls[0].arguments["city"], "Paris");
    // The thought splitter knows Gemma's thought channel, fed one byte at a time; tool-call
    // text is left in the content (requests with thinking on but no tools).
    const std::string reply = "<|channel>thought\nweigh it<channel|>{\"a\":1}<|tool_call>call:f{}<tool_call|>";
    auto split = backend->thought_splitter();
    ringlm::server::ThoughtSplitter::Delta d;
    for (char c : reply) split->push(std::string_view(&c, 1), d);
    split->finish(d);
    EXPECT_EQ(d.reasoning, "weigh it");
    EXPECT_EQ(d.content, "{\"a\":1}<|tool_call>call:f{}<tool_call|>");
  }
  fs::remove_all(dir);
}

// Issue #28's remote crash: {"prompt":"x","top_p":1e-46} answered 400 and then the server died
// (SIGSEGV in the batched loop: a slot was left busy without a sampler). The request is now
// refused at parsing (top_p is 0 as a float), a sampler the engine refuses all the same leaves
// the loop as it was, and normal requests keep working.
TEST(EngineBackend, RefusedSamplingLeavesTheServerServing) {
  const fs::path dir = fs::temp_directory_path() / ("ringlm_engine_backend_crash_" + std::to_string(::getpid()));
  ringlm::model::testing::TestCheckpointOptions o;
  o.preset = "tiny";
  o.seed = 5;
  o.tokenizer_dir = fs::path(RINGLM_TOKENIZER_DIR);
  ringlm::model::testing::write_test_checkpoint(dir, o);
  {
    ringlm::server::BackendOptions bo;
    bo.engine.model_dir = dir;
    bo.engine.context_tokens = 256;
    bo.slots = 1;
    auto backend = ringlm::server::make_engine_backend(bo);
    const std::vector<std::int32_t> prompt = backend->tokenize("hello");
    ringlm::engine::GenerationParams bad;
    bad.max_tokens = 3;
    bad.sampling.temperature = 1.0f;
    bad.sampling.top_p = 0.0f;  // past the request parser (a caller of the library)
    for (int i = 0; i < 3; ++i)
      EXPECT_THROW(backend->generate(0, prompt, bad, [](const ringlm::engine::TokenEvent&) { return true; }),
                   ringlm::Error);
    ringlm::engine::GenerationParams ok;
    ok.max_tokens = 3;
    ok.ignore_stop_ids = true;
    auto r = backend->generate(0, prompt, ok, [](const ringlm::engine::TokenEvent&) { return true; });
    EXPECT_EQ(r.completion_tokens, 3);

    ringlm::server::ServerOptions so;
    so.port = 0;
    so.access_log = false;
    ringlm::server::HttpServer server(*backend, so);
    const int port = server.start();
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60);
    for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
      const std::string body = std::string(path) == "/v1/completions"
                                   ? R"({"prompt":"x","top_p":1e-46,"max_tokens":2})"
                                   : R"({"messages":[{"role":"user","content":"x"}],"top_p":1e-46,"max_tokens":2})";
      auto res = c.Post(path, body, "application/json");
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 400) << res->body;
      EXPECT_EQ(nlohmann::json::parse(res->body)["error"]["param"], "top_p") << res->body;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the crash came within a step or two
    for (int i = 0; i < 3; ++i) {
      auto res = c.Post("/v1/completions", R"({"prompt":"x","max_tokens":2,"temperature":1,"top_p":0.5})", "application/json");
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 200) << res->body;
    }
    server.stop();
    server.wait();
  }
  fs::remove_all(dir);
}

// serve --draft: several requests in flight at once on a drafting backend (continuous
// batching, verification rows in the shared pass) reply exactly as a backend without
// drafting does: tokens, text, logprobs and top logprobs; greedy, seeded sampling, guided
// JSON, and requests whose speculative.n_max lowers k or turns drafting off. (The
// assistant's sampled request: as the drafting backend replies to it alone.)
TEST(EngineBackend, DraftingGivesThePlainReplies) {
  using namespace ringlm;
  const fs::path dir = fs::temp_directory_path() / ("ringlm_engine_backend_draft_" + std::to_string(::getpid()));
  model::testing::TestCheckpointOptions o;
  o.preset = "tiny";
  o.seed = 6;
  o.tokenizer_dir = fs::path(RINGLM_TOKENIZER_DIR);
  model::testing::write_test_checkpoint(dir, o);
  // serve --draft assistant without PATH: the assistant found as MODEL/assistant.
  model::testing::write_test_assistant(dir / "assistant", {.preset = "tiny", .seed = 3});
  for (const char* source : {"ngram", "assistant"}) {
    SCOPED_TRACE(source);
    server::BackendOptions bo;
    bo.engine.model_dir = dir;
    bo.engine.context_tokens = 512;
    bo.slots = 3;
    auto plain = server::make_engine_backend(bo);
    bo.draft = engine::parse_draft(source, 4);
    auto drafting = server::make_engine_backend(bo);

    struct Req {
      std::vector<std::int32_t> prompt;
      engine::GenerationParams params;
    };
    std::vector<Req> reqs;
    const std::vector<std::int32_t> words = plain->tokenize("order AB-1234 for Ana Lee, order AB-1234 for Ana Lee, ");
    for (int i = 0; i < 5; ++i) {
      Req r;
      // A different first token each: no request reuses another's prompt KV (a reused prefix
      // may be chunked differently from a computed one, which would change the bits).
      r.prompt = plain->tokenize(std::string(1, static_cast<char>('a' + i)) + " says: ");
      for (int rep = 0; rep < 3 + i; ++rep) r.prompt.insert(r.prompt.end(), words.begin(), words.end());
      r.params.max_tokens = 24 + 4 * i;
      r.params.ignore_stop_ids = true;
      r.params.logprobs = true;
      r.params.top_logprobs = 2;
      if (i == 1) r.params.sampling.temperature = 0.8f, r.params.sampling.seed = 11;
      if (i == 2) r.params.json_object = true, r.params.ignore_stop_ids = false, r.params.max_tokens = 60;
      if (i == 3) r.params.draft_max_request = 0;  // this request does not draft
      if (i == 4) r.params.draft_max_request = 2;
      reqs.push_back(r);
    }
    struct Got {
      engine::GenerationResult result;
      std::vector<engine::TokenEvent> events;
    };
    auto run = [&](server::Backend& b, const Req& r, Got& g) {
      g.result = b.generate(0, r.prompt, r.params, [&g](const engine::TokenEvent& e) {
        g.events.push_back(e);
        return true;
      });
    };
    std::vector<Got> ref(reqs.size()), got(reqs.size());
    for (std::size_t i = 0; i < reqs.size(); ++i) run(*plain, reqs[i], ref[i]);
    {
      std::vector<std::thread> threads;
      for (std::size_t i = 0; i < reqs.size(); ++i) threads.emplace_back([&, i] { run(*drafting, reqs[i], got[i]); });
      for (auto& t : threads) t.join();
    }
    // The assistant draws its drafts from its own distribution under sampling: a sampled
    // reply keeps its distribution, not its bits (engine/assistant_drafter.h), so it is
    // compared with the same request run alone on the drafting backend (one output per
    // seed, however the requests were batched).
    const bool sampled_drafts = std::string(source) == "assistant";
    for (std::size_t i = 0; i < reqs.size(); ++i)
      if (sampled_drafts && reqs[i].params.sampling.temperature > 0.0f) ref[i] = {}, run(*drafting, reqs[i], ref[i]);
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      SCOPED_TRACE("request " + std::to_string(i));
      EXPECT_EQ(got[i].result.text, ref[i].result.text);
      EXPECT_EQ(got[i].result.finish, ref[i].result.finish);
      ASSERT_EQ(got[i].events.size(), ref[i].events.size());
      for (std::size_t k = 0; k < got[i].events.size(); ++k) {
        EXPECT_EQ(got[i].events[k].id, ref[i].events[k].id) << "token " << k;
        EXPECT_EQ(got[i].events[k].logprob, ref[i].events[k].logprob) << "token " << k;
        ASSERT_EQ(got[i].events[k].top.size(), ref[i].events[k].top.size());
        for (std::size_t j = 0; j < got[i].events[k].top.size(); ++j) {
          EXPECT_EQ(got[i].events[k].top[j].id, ref[i].events[k].top[j].id);
          EXPECT_EQ(got[i].events[k].top[j].logprob, ref[i].events[k].top[j].logprob);
        }
      }
      if (!(sampled_drafts && reqs[i].params.sampling.temperature > 0.0f)) EXPECT_EQ(ref[i].result.drafted_tokens, 0);
    }
    EXPECT_EQ(got[3].result.drafted_tokens, 0) << "speculative.n_max 0 turns drafting off";
    int drafted = 0;
    for (const auto& g : got) drafted += g.result.drafted_tokens;
    EXPECT_GT(drafted, 0) << "the drafting backend never drafted";
    for (std::size_t i = 0; i < reqs.size(); ++i)  // the sampled requests' second run counts too
      if (sampled_drafts && reqs[i].params.sampling.temperature > 0.0f) drafted += ref[i].result.drafted_tokens;
    // The loop publishes its counters after the step in which a reply completed, so a gauge
    // read right after generate() returns may lag that step (seen 1 in 8 runs on main): poll.
    server::Gauges gauges;
    for (int tries = 0; tries < 200; ++tries) {
      gauges = {};
      drafting->add_gauges(gauges);
      if (gauges.drafted_tokens == static_cast<std::uint64_t>(drafted)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(gauges.drafted_tokens, static_cast<std::uint64_t>(drafted));
  }
  fs::remove_all(dir);
}
