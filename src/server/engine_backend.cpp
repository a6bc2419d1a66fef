// The engine-backed Backend behind `ringlm serve`: one Engine (model, tokenizer, chat
// template, grammar cache) shared by all slots, and one Generator (KV session) per slot, so a
// client that continues its conversation on the same slot reuses its KV cache.
#include "server/engine_backend.h"

#include <atomic>
#include <filesystem>
#include <memory>
#include <vector>

#include "chat/gemma_reply.h"
#include "engine/generator.h"
#include "util/error.h"

namespace ringlm::server {

namespace {

class EngineBackend final : public Backend {
 public:
  explicit EngineBackend(const BackendOptions& o)
      : engine_(o.engine),
        used_(static_cast<std::size_t>(std::max(1, o.slots))) {
    if (o.slots < 1) fail("serve: --slots must be at least 1, got ", o.slots);
    for (int i = 0; i < o.slots; ++i) generators_.push_back(std::make_unique<engine::Generator>(engine_));
    const auto dir = o.engine.model_dir.lexically_normal();
    id_ = dir.filename().string();
    if (id_.empty()) id_ = dir.parent_path().filename().string();
    if (id_.empty()) id_ = "ringlm";
  }

  std::string model_id() const override { return id_; }
  int context_length() const override { return generators_[0]->session().context_capacity(); }
  int slots() const override { return static_cast<int>(generators_.size()); }

  std::vector<std::int32_t> render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                        const std::string& tool_choice, bool add_generation_prompt) override {
    // Templates print any role they are given; reject what no chat model was trained on.
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const auto& role = messages[i].value("role", std::string());
      if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
        fail("messages[", i, "].role: '", role, "' is not one of system, developer, user, assistant, tool");
    }
    chat::ChatRequest req;
    req.messages = messages;
    // "none": the model must not call tools, so it is not told about them.
    if (tools.is_array() && !tools.empty() && tool_choice != "none") req.tools = tools;
    req.add_generation_prompt = add_generation_prompt;
    return engine_.tokenizer().encode(engine_.render_chat(req));
  }

  std::vector<std::int32_t> tokenize(std::string_view text) override {
    EncodeOptions eo;
    eo.add_bos = engine_.tokenizer().add_bos_default() && engine_.tokenizer().bos_id() >= 0;
    return engine_.tokenizer().encode(text, eo);
  }

  std::string token_text(std::int32_t id) override {
    const auto& tok = engine_.tokenizer();
    if (id < 0 || id >= tok.vocab_size()) return "";
    if (tok.is_special(id)) return std::string(tok.piece(id));
    return tok.token_bytes(id);
  }

  engine::GenerationResult generate(int slot, const std::vector<std::int32_t>& prompt,
                                    const engine::GenerationParams& params,
                                    const engine::TokenCallback& on_token) override {
    if (slot < 0 || slot >= slots()) fail("internal error: slot ", slot, " out of range");
    auto& gen = *generators_[static_cast<std::size_t>(slot)];
    used_[static_cast<std::size_t>(slot)].store(static_cast<std::int64_t>(prompt.size()));
    auto result = gen.generate(prompt, params, on_token);
    used_[static_cast<std::size_t>(slot)].store(static_cast<std::int64_t>(gen.cached_tokens().size()));
    return result;
  }

  ParsedReply parse_reply(std::string_view text) override {
    chat::GemmaReply r = chat::parse_gemma_reply(text);
    ParsedReply out;
    out.content = std::move(r.content);
    out.reasoning = std::move(r.thinking);
    for (auto& call : r.tool_calls)
      out.tool_calls.push_back({call.name, call.arguments});
    return out;
  }

  std::int64_t kv_tokens_used() const override {
    std::int64_t n = 0;
    for (const auto& u : used_) n += u.load();
    return n;
  }
  std::int64_t kv_tokens_capacity() const override {
    return static_cast<std::int64_t>(context_length()) * slots();
  }

 private:
  engine::Engine engine_;
  std::vector<std::unique_ptr<engine::Generator>> generators_;
  std::vector<std::atomic<std::int64_t>> used_;  // KV tokens held per slot (for /metrics)
  std::string id_;
};

}  // namespace

std::unique_ptr<Backend> make_engine_backend(const BackendOptions& options) {
  return std::make_unique<EngineBackend>(options);
}

}  // namespace ringlm::server
