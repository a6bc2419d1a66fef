// A deterministic stand-in for the engine, for tests and `ringlm serve --fake-backend`.
// One token per byte of text (so multi-byte characters split across tokens, like a real BPE
// vocabulary can); replies are built from the request: a schema instance for json_schema,
// a tool call of the first tool when tools are offered (two calls when the prompt says
// "__two_calls__"), otherwise a seeded word sequence; an embedding request gets the prompt's
// byte histogram folded into 16 dimensions;
// with thinking on, that reply follows a fixed `<think>...</think>` thought.
// It honours max_tokens, stop strings (held back while they might still match), cancellation
// and per-slot exclusivity, and records what it was asked for so tests can check plumbing.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "server/backend.h"

namespace ringlm::server {

struct FakeBackendOptions {
  int slots = 2;
  int context_length = 4096;
  std::chrono::microseconds token_delay{1000};  // simulated decode time per token
  int reply_words = 12;                         // length of a plain reply
  // Media parts accepted (headers probed for real, nothing decoded): each costs media_tokens
  // prompt tokens, and "encoding" holds the planned bytes for media_delay.
  bool media = false;
  int media_tokens = 64;
  std::chrono::milliseconds media_delay{0};
};

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(FakeBackendOptions options = {});

  std::string model_id() const override { return "ringlm-fake"; }
  int context_length() const override { return options_.context_length; }
  int slots() const override { return options_.slots; }
  std::vector<std::int32_t> render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                        const std::string& tool_choice, bool add_generation_prompt,
                                        bool enable_thinking) override;
  MediaPlan plan_chat_media(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                            const std::string& tool_choice, bool add_generation_prompt, bool enable_thinking,
                            const std::vector<MediaInput>& media) override;
  PromptWithMedia render_chat_media(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                    const std::string& tool_choice, bool add_generation_prompt, bool enable_thinking,
                                    const std::vector<MediaInput>& media) override;
  std::vector<std::int32_t> tokenize(std::string_view text) override;
  std::string token_text(std::int32_t id) override;
  int vocab_size() const override { return 256; }  // one token per byte
  ModelInfo model_info() const override { return {"(the fake backend's own markup)", "", ""}; }
  engine::GenerationResult generate(int slot, const std::vector<std::int32_t>& prompt,
                                    const engine::GenerationParams& params,
                                    const engine::TokenCallback& on_token) override;
  ParsedReply parse_reply(std::string_view text) override;
  std::unique_ptr<ThoughtSplitter> thought_splitter() override;
  std::int64_t kv_tokens_used() const override { return kv_used_.load(); }
  std::int64_t kv_tokens_capacity() const override {
    return static_cast<std::int64_t>(options_.slots) * options_.context_length;
  }

  // What the last request asked for (for tests).
  struct Seen {
    engine::GenerationParams params;
    nlohmann::ordered_json tools;
    std::string tool_choice;
    nlohmann::ordered_json messages;
    bool enable_thinking = false;
  };
  Seen last_seen() const;
  int cancellations() const { return cancellations_.load(); }
  int generations() const { return generations_.load(); }
  int active() const { return active_.load(); }
  int max_active() const { return max_active_.load(); }
  int media_encodes() const { return media_encodes_.load(); }  // render_chat_media calls that "decoded"


  // The reply text generate() would produce before max_tokens/stop are applied.
  std::string reply_for(const std::vector<std::int32_t>& prompt, const engine::GenerationParams& params) const;

 private:
  FakeBackendOptions options_;
  mutable std::mutex mu_;
  Seen seen_;
  std::vector<std::atomic<bool>> slot_busy_;
  std::vector<std::vector<std::int32_t>> slot_history_;  // per slot: last prompt + reply (the "KV cache")
  std::atomic<int> cancellations_{0}, generations_{0}, active_{0}, max_active_{0}, media_encodes_{0};
  std::atomic<std::int64_t> kv_used_{0};
};

}  // namespace ringlm::server
