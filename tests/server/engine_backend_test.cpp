// The Backend contract (what the HTTP layer relies on) checked on the real engine over a tiny
// random-weight model with the Gemma 4 chat template.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "model/testing/test_checkpoint.h"
#include "server/engine_backend.h"
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
