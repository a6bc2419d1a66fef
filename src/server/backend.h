// The model-side services the HTTP server needs, behind one interface so the server can be
// tested with a deterministic test double and run for real on the engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/generation.h"
#include "server/media.h"
#include "server/metrics.h"
#include "util/error.h"

namespace ringlm::server {

struct ToolCall {
  std::string name;
  nlohmann::ordered_json arguments;  // a JSON object
};

// A model reply split the way Gemma 4 writes it.
struct ParsedReply {
  std::string content;
  std::string reasoning;            // text of the thought channel, if any
  std::vector<ToolCall> tool_calls;
};

// Splits a reply to a request with thinking on into its thought and its answer, piece by
// piece as the tokens stream (text that may begin a marker is held back until it is certain).
// Tool-call text is not parsed: it stays in the content.
class ThoughtSplitter {
 public:
  struct Delta {
    std::string reasoning;  // thought text (the channel markers and name removed)
    std::string content;    // answer text
  };
  virtual ~ThoughtSplitter() = default;
  virtual void push(std::string_view piece, Delta& out) = 0;
  // End of the reply: releases what was held back.
  virtual void finish(Delta& out) = 0;
};

// A chat prompt with its media: the ids, and the soft-token rows that replace the media
// placeholder positions (null when there is no media).
struct PromptWithMedia {
  std::vector<std::int32_t> ids;
  std::shared_ptr<const engine::PromptEmbeddings> embeddings;
  int media_tokens = 0;  // soft tokens over all media
};

// What a chat prompt with media will cost, known from the media's headers before anything
// is decoded (Backend::plan_chat_media).
struct MediaPlan {
  // The prompt's tokens with every part expanded to its soft tokens: exact for images, at
  // most one token short per clip for audio (a clip whose header gives no length counts 0).
  int prompt_tokens = 0;
  // Estimated peak memory of decoding, preprocessing and the soft-token rows, all parts
  // together (the towers' own scratch is not counted: encodes run one at a time).
  std::size_t work_bytes = 0;
};

// Thread safety: the HTTP layer calls model_id, context_length, slots, render_chat, tokenize,
// token_text, parse_reply and kv_tokens_* concurrently from its request threads, and
// generate() concurrently for different slots (never twice at once for the same slot).
class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string model_id() const = 0;
  virtual int context_length() const = 0;
  // How many generations may run at once; generate() is called with slot in [0, slots()).
  virtual int slots() const = 0;

  // Renders OpenAI-style `messages` (+ optional `tools`) with the model's chat template and
  // tokenizes the result. Throws ringlm::Error for messages the template rejects.
  // The server normalises messages first: every `content` is a string or null (text parts
  // joined), and assistant `tool_calls[].function.arguments` are JSON objects, not strings.
  // `tools` is an array of OpenAI function tools (possibly empty). `tool_choice` is "auto",
  // "none" or "required" (a named function arrives as "required" with `tools` narrowed to it).
  // `enable_thinking`: the template is rendered with thinking on (the model is asked to think
  // first, in its thought channel); false leaves the template's default.
  virtual std::vector<std::int32_t> render_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                                const std::string& tool_choice, bool add_generation_prompt,
                                                bool enable_thinking) = 0;
  // render_chat for messages whose content holds media parts ({"type":"image"} and
  // {"type":"audio"}, one per entry of `media`, in order): decodes and encodes each one. Throws ringlm::Error (naming the
  // part) for media that cannot be decoded or a model that cannot take them. The default:
  // a backend without media support refuses any.
  virtual PromptWithMedia render_chat_media(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                            const std::string& tool_choice, bool add_generation_prompt,
                                            bool enable_thinking, const std::vector<MediaInput>& media) {
    if (!media.empty()) throw Error("this server's model takes no images or audio", ErrorKind::unsupported, media[0].param);
    return {render_chat(messages, tools, tool_choice, add_generation_prompt, enable_thinking), nullptr, 0};
  }
  // The plan for render_chat_media with the same arguments, from headers only: throws
  // ringlm::Error (naming the part) for what render_chat_media would refuse from the headers
  // (format, dimensions, pixel and duration limits, a model without that tower). The default
  // refuses media, as render_chat_media does.
  virtual MediaPlan plan_chat_media(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                    const std::string& tool_choice, bool add_generation_prompt, bool enable_thinking,
                                    const std::vector<MediaInput>& media) {
    if (!media.empty()) throw Error("this server's model takes no images or audio", ErrorKind::unsupported, media[0].param);
    return {static_cast<int>(render_chat(messages, tools, tool_choice, add_generation_prompt, enable_thinking).size()), 0};
  }
  // Token ids for a raw completion prompt (/v1/completions), including BOS if the model needs it.
  virtual std::vector<std::int32_t> tokenize(std::string_view text) = 0;
  // The bytes one token stands for (may be part of a UTF-8 character): used for logprobs'
  // `token` and `bytes` fields. Returns "" for an id outside the vocabulary.
  virtual std::string token_text(std::int32_t id) = 0;

  // Blocking generation on session `slot` (each slot is used by one request at a time).
  // Throws ringlm::Error for a bad request (e.g. a schema that does not compile).
  virtual engine::GenerationResult generate(int slot, const std::vector<std::int32_t>& prompt,
                                            const engine::GenerationParams& params,
                                            const engine::TokenCallback& on_token) = 0;

  // /tokenize: ids of plain text, with the model's BOS first only when `add_special`, and
  // special tokens written in the text matched as such only when `parse_special`. The
  // default (a backend whose tokenize() adds nothing): tokenize().
  virtual std::vector<std::int32_t> tokenize_text(std::string_view text, bool /*add_special*/, bool /*parse_special*/) {
    return tokenize(text);
  }
  // Vocabulary size: ids in [0, vocab_size()) are valid.
  virtual int vocab_size() const = 0;
  // /apply-template: the prompt text of a conversation (render_chat's arguments), not its ids.
  // The default joins the rendered ids' token texts.
  virtual std::string render_chat_text(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                       const std::string& tool_choice, bool add_generation_prompt, bool enable_thinking) {
    std::string text;
    for (std::int32_t id : render_chat(messages, tools, tool_choice, add_generation_prompt, enable_thinking))
      text += token_text(id);
    return text;
  }
  // /props: what the model directory says of itself (chat template source, bos/eos token
  // strings); empty strings where it has none.
  struct ModelInfo {
    std::string chat_template, bos_token, eos_token;
  };
  virtual ModelInfo model_info() const { return {}; }

  // Splits a finished reply into content, reasoning and tool calls.
  virtual ParsedReply parse_reply(std::string_view text) = 0;
  // A fresh splitter for one reply to a request with thinking on (streamed or whole).
  virtual std::unique_ptr<ThoughtSplitter> thought_splitter() = 0;

  // KV cache use for /metrics: tokens held across all slots, and their capacity.
  virtual std::int64_t kv_tokens_used() const = 0;
  virtual std::int64_t kv_tokens_capacity() const = 0;
  // Backend-specific gauges for /metrics (the batched loop's figures); none by default.
  virtual void add_gauges(Gauges&) const {}
};

}  // namespace ringlm::server
