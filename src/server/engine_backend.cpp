// The engine-backed Backend behind `ringlm serve`: one Engine (model, tokenizer, chat
// template, grammar cache) and one engine::BatchLoop whose --slots sequences all advance in
// one batched forward pass per step (continuous batching). The server's slot workers call
// generate() concurrently; each call joins the loop at its next step. A request lands on the
// free row whose KV cache shares the longest prefix with its prompt (a follow-up turn reuses
// its conversation's KV) and the first rows' caches serve as the prefix cache.
#include "server/engine_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include "engine/assistant_drafter.h"

#include "chat/gemma_reply.h"
#include "engine/batch_loop.h"
#include "engine/media_prompt.h"
#include "audio/audio_decode.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"
#include "util/error.h"

namespace ringlm::server {

namespace {

// input_audio names its container; data in another one is refused (a client that labels every
// clip "wav" has a bug worth hearing about). "ogg" covers Ogg Vorbis and Ogg Opus.
void check_audio_format(const MediaInput& m, const std::string& decoded) {
  if (m.format.empty() || m.format == decoded || (m.format == "ogg" && decoded == "opus") ||
      (m.format == "opus" && decoded == "ogg"))
    return;
  fail(m.name, ": the part says format '", m.format, "' but the data is ", decoded, " audio");
}

// Gemma 4's thought channel (`<|channel>thought\n...<channel|>`), split by the chat module's
// reply parser with tool-call parsing off.
class GemmaThoughtSplitter final : public ThoughtSplitter {
 public:
  void push(std::string_view piece, Delta& out) override {
    stream_.push(piece, events_);
    drain(out);
  }
  void finish(Delta& out) override {
    stream_.finish(events_);
    drain(out);
  }

 private:
  void drain(Delta& out) {
    for (auto& e : events_) (e.kind == chat::GemmaReplyStream::Event::Kind::Thinking ? out.reasoning : out.content) += e.text;
    events_.clear();
  }
  chat::GemmaReplyStream stream_{/*tool_calls=*/false};
  std::vector<chat::GemmaReplyStream::Event> events_;
};

class EngineBackend final : public Backend {
 public:
  explicit EngineBackend(const BackendOptions& o)
      : engine_(o.engine),
        media_(engine_),
        trust_control_tokens_(o.trust_control_tokens),
        mask_budget_{std::chrono::milliseconds(o.mask_budget_ms), o.mask_budget_mb << 20},
        draft_(o.draft) {
    if (o.slots < 1) fail("serve: --slots must be at least 1, got ", o.slots);
    // --draft assistant: load and check the assistant at startup, not at the first request.
    if (draft_.source == engine::DraftSource::assistant) engine::load_assistant(engine_, draft_.assistant_path);
    const int draft_max = draft_.source == engine::DraftSource::none ? 0 : draft_.max_tokens;
    loop_ = std::make_unique<engine::BatchLoop>(
        engine_, engine::BatchSchedulerOptions{
                     .max_sequences = o.slots, .prefix_cache_bytes = o.prefix_cache_bytes, .draft_max = draft_max});
    const auto dir = o.engine.model_dir.lexically_normal();
    id_ = dir.filename().string();
    if (id_.empty()) id_ = dir.parent_path().filename().string();
    if (id_.empty()) id_ = "ringlm";
  }

  std::string model_id() const override { return id_; }

  // The template's view of a request. Templates print any role they are given: reject what
  // no chat model was trained on.
  static chat::ChatRequest chat_request(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                        const std::string& tool_choice, bool add_generation_prompt, bool enable_thinking) {
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
    if (enable_thinking) req.enable_thinking = true;  // else the template's default, as before
    return req;
  }
  int context_length() const override { return loop_->context_capacity(); }
  int slots() const override { return loop_->max_sequences(); }

  std::vector<std::int32_t> render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                        const std::string& tool_choice, bool add_generation_prompt,
                                        bool enable_thinking) override {
    return engine_.encode_chat(chat_request(messages, tools, tool_choice, add_generation_prompt, enable_thinking),
                               trust_control_tokens_);
  }

  PromptWithMedia render_chat_media(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                    const std::string& tool_choice, bool add_generation_prompt, bool enable_thinking,
                                    const std::vector<MediaInput>& media) override {
    if (media.empty()) return {render_chat(messages, tools, tool_choice, add_generation_prompt, enable_thinking), nullptr, 0};
    // Decoded first (cheap header checks before any pixel or sample), so a bad file fails
    // before a tower runs. The pixel limit is shared by the request's images and the duration
    // limit by its clips: one request cannot hold more decoded pixels than one image may have,
    // nor more seconds of audio than one clip may (the towers' cost grows with both).
    std::vector<vision::RgbImage> images;
    std::vector<int> budgets;
    std::vector<audio::AudioClip> audios;
    vision::ImageLimits limits;
    std::uint64_t pixels_left = limits.max_pixels;
    const audio::AudioLimits audio_limits;
    double seconds = 0.0;
    for (const auto& m : media) {
      try {
        if (m.kind == MediaKind::audio) {
          audio::AudioLimits l = audio_limits;
          l.max_file_bytes = m.bytes.size();
          audios.push_back(audio::decode_audio(reinterpret_cast<const std::uint8_t*>(m.bytes.data()), m.bytes.size(),
                                               m.name, /*target_rate=*/0, l));
          check_audio_format(m, audios.back().format);
          seconds += audios.back().seconds;
          if (seconds > audio_limits.max_seconds)
            fail(m.name, ": the request's audio clips add up to ", seconds, " s; at most ", audio_limits.max_seconds,
                 " s of audio are accepted per request");
          continue;
        }
        limits.max_pixels = pixels_left;
        limits.max_file_bytes = m.bytes.size();
        images.push_back(vision::decode_image(reinterpret_cast<const std::uint8_t*>(m.bytes.data()), m.bytes.size(), m.name,
                                              limits));
      } catch (const Error& e) {
        throw Error(e.what(), e.kind(), m.param);
      }
      pixels_left -= static_cast<std::uint64_t>(images.back().width) * images.back().height;
      budgets.push_back(m.soft_tokens);
    }
    const std::vector<std::int32_t> ids = render_chat(messages, tools, tool_choice, add_generation_prompt, enable_thinking);
    // The towers load here, so that a model without one names the first part of that kind.
    for (const auto& m : media) {
      try {
        if (m.kind == MediaKind::audio) media_.audio();
        else media_.vision();
      } catch (const Error& e) {
        throw Error(e.what(), e.kind(), m.param);
      }
    }
    engine::MediaPrompt p;
    try {
      p = media_.expand(ids, images, budgets, audios);
    } catch (const Error& e) {
      throw Error(e.what(), e.kind(), media[0].param);
    }
    return {std::move(p.ids), std::move(p.embeddings), p.image_tokens + p.audio_tokens};
  }

  MediaPlan plan_chat_media(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                            const std::string& tool_choice, bool add_generation_prompt, bool enable_thinking,
                            const std::vector<MediaInput>& media) override {
    // The limits render_chat_media applies after decoding, applied here to the headers: the
    // request's pixels share one image's limit, its clips one clip's duration.
    const std::vector<std::int32_t> ids = render_chat(messages, tools, tool_choice, add_generation_prompt, enable_thinking);
    MediaPlan plan{static_cast<int>(ids.size()), 0};
    const vision::ImageLimits image_limits;
    const audio::AudioLimits audio_limits;
    std::uint64_t pixels = 0;
    double seconds = 0.0;
    for (const auto& m : media) {
      try {
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(m.bytes.data());
        if (m.kind == MediaKind::audio) {
          const audio::AudioInfo info = audio::probe_audio(bytes, m.bytes.size(), m.name, audio_limits);
          check_audio_format(m, info.format);
          const audio::AudioConfig& ac = media_.audio().config();
          const double s = info.seconds >= 0 ? info.seconds : audio_limits.max_seconds;  // unknown: the most it may be
          seconds += info.seconds >= 0 ? info.seconds : 0.0;
          if (seconds > audio_limits.max_seconds)
            fail(m.name, ": the request's audio clips add up to ", seconds, " s; at most ", audio_limits.max_seconds,
                 " s of audio are accepted per request");
          const int tokens = info.seconds >= 0 ? ac.soft_tokens_for(static_cast<long long>(info.seconds * ac.sampling_rate)) : 0;
          plan.prompt_tokens += std::max(0, tokens - 1) + 1;  // boa + tokens + eoa replace one placeholder
          // Decoded blocks and the mono track at the file's rate, resampled copy, features, rows.
          plan.work_bytes += static_cast<std::size_t>(s * (info.rate * (info.channels + 2.0) + 3.0 * ac.sampling_rate) * 4) +
                             static_cast<std::size_t>(ac.soft_tokens_for(static_cast<long long>(s * ac.sampling_rate))) *
                                 static_cast<std::size_t>(ac.text_hidden_size) * 4;
          continue;
        }
        const vision::ImageInfo info = vision::probe_image(bytes, m.bytes.size(), m.name, image_limits);
        pixels += static_cast<std::uint64_t>(info.width) * static_cast<std::uint64_t>(info.height);
        if (pixels > image_limits.max_pixels)
          fail(m.name, ": the request's images hold ", pixels, " pixels together; the limit is ", image_limits.max_pixels,
               " per request");
        const vision::VisionConfig& vc = media_.vision().config();
        const int budget = m.soft_tokens > 0 ? m.soft_tokens : vc.default_soft_tokens;
        if (!vision::is_soft_token_budget(budget))
          fail(m.name, ": image token budget ", budget, " is not one of 70, 140, 280, 560, 1120");
        const int p = vc.patch_size, k = vc.pooling_kernel_size;
        auto [th, tw] = vc.do_resize ? vision::target_image_size(info.height, info.width, p, budget * k * k, k, m.name)
                                     : std::pair<int, int>{info.height, info.width};
        const std::size_t patches = static_cast<std::size_t>(th / p) * static_cast<std::size_t>(tw / p);
        const std::size_t tokens = patches / static_cast<std::size_t>(k * k);
        plan.prompt_tokens += static_cast<int>(tokens) + 1;
        // The decoded image and the decoder's and resize's intermediates (5 bytes per source
        // pixel: calibrated on a 9459 x 9459 PNG, whose peak RSS grew by 473 MB where the RGB
        // alone is 268 MB), the resize's two passes, the patches as floats, the soft-token rows.
        plan.work_bytes += static_cast<std::size_t>(info.width) * info.height * 5 +
                           static_cast<std::size_t>(info.height) * tw * 3 + static_cast<std::size_t>(th) * tw * 3 +
                           patches * static_cast<std::size_t>(p * p * 3) * 4 + tokens * vc.text_hidden_size * 4;
      } catch (const Error& e) {
        throw Error(e.what(), e.kind(), m.param);
      }
    }
    return plan;
  }

  std::vector<std::int32_t> tokenize(std::string_view text) override {
    return engine_.encode_text(text);
  }

  std::vector<std::int32_t> tokenize_text(std::string_view text, bool add_special, bool parse_special) override {
    const auto& tok = engine_.tokenizer();
    EncodeOptions eo;
    eo.add_bos = add_special && tok.bos_id() >= 0;
    eo.parse_special = parse_special;
    return tok.encode(text, eo);
  }

  int vocab_size() const override { return engine_.tokenizer().vocab_size(); }

  std::string render_chat_text(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                               const std::string& tool_choice, bool add_generation_prompt, bool enable_thinking) override {
    return engine_.render_chat(chat_request(messages, tools, tool_choice, add_generation_prompt, enable_thinking));
  }

  ModelInfo model_info() const override {
    ModelInfo info;
    if (const chat::ChatTemplate* t = engine_.chat_template()) {
      const auto& sp = t->special_tokens();
      if (sp.contains("bos_token") && sp["bos_token"].is_string()) info.bos_token = sp["bos_token"].get<std::string>();
      if (sp.contains("eos_token") && sp["eos_token"].is_string()) info.eos_token = sp["eos_token"].get<std::string>();
    }
    // The template's source as the model directory has it (a template inside a tokenizer
    // config is not repeated here).
    std::ifstream in(engine_.options().model_dir / "chat_template.jinja", std::ios::binary);
    if (in) info.chat_template.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return info;
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
    // The schema's mask work is bounded per request (guided/work_budget.h); the batched loop
    // charges it to this request whichever step computes its masks.
    engine::GenerationParams p = params;
    p.mask_budget = mask_budget_;
    p.draft = draft_;  // the server's policy; the request may only lower k or turn it off
    if (params.draft_max_request == 0) p.draft.source = engine::DraftSource::none;
    else if (params.draft_max_request > 0) p.draft.max_tokens = std::min(p.draft.max_tokens, params.draft_max_request);
    return loop_->generate(prompt, p, on_token);
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

  std::unique_ptr<ThoughtSplitter> thought_splitter() override { return std::make_unique<GemmaThoughtSplitter>(); }

  std::int64_t kv_tokens_used() const override { return loop_->stats().kv_tokens_used; }
  std::int64_t kv_tokens_capacity() const override {
    return static_cast<std::int64_t>(context_length()) * slots();
  }
  void add_gauges(Gauges& g) const override {
    const engine::BatchLoopStats s = loop_->stats();
    g.batched = true;
    g.batch_steps = s.batch.steps;
    g.batch_rows = s.batch.rows;
    g.batch_sequence_steps = s.batch.sequence_steps;
    g.batch_last = s.batch.last_batch;
    g.drafted_tokens = s.batch.drafted;
    g.accepted_drafts = s.batch.accepted;
    g.prefix_hits = s.batch.prefix_hits;
    g.prefix_misses = s.batch.prefix_misses;
    g.prefix_reused_tokens = s.batch.reused_tokens;
    g.kv_bytes = s.kv_bytes;
    const engine::PrefixCacheStats& pc = s.batch.prefix_cache;
    g.prefix_store_hits = pc.hits;
    g.prefix_store_tokens = pc.hit_tokens;
    g.prefix_store_evicted = pc.evicted_blocks;
    g.prefix_store_bytes = pc.bytes;
    g.prefix_store_max_bytes = pc.max_bytes;
    g.prefix_store_blocks = pc.blocks;
    const guided::GrammarCacheStats gc = engine_.grammar_cache_stats();
    g.grammar_cache = true;
    g.grammar_entries = gc.entries;
    g.grammar_bytes = gc.bytes;
    g.grammar_max_bytes = gc.max_bytes;
    g.grammar_hits = gc.hits;
    g.grammar_misses = gc.misses;
    g.grammar_evictions = gc.evictions;
  }

 private:
  engine::Engine engine_;
  engine::MediaEncoder media_;  // the vision / audio tower, each loaded at its first use
  std::unique_ptr<engine::BatchLoop> loop_;
  bool trust_control_tokens_;
  guided::WorkBudget mask_budget_;
  engine::DraftParams draft_;
  std::string id_;
};

}  // namespace

std::unique_ptr<Backend> make_engine_backend(const BackendOptions& options) {
  return std::make_unique<EngineBackend>(options);
}

}  // namespace ringlm::server
