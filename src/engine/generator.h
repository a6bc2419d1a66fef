// One generation stream over one KV session: prompt in, tokens out, with sampling, JSON
// Schema constraints, stop ids and stop strings.
//
// The session remembers which tokens its KV cache holds; a new prompt that starts with them
// reuses their KV and prefills only the rest (multi-turn chat, shared prompt prefixes).
// pin_prefix() additionally keeps a copy of the sliding-window rings after a prefix, so
// a batch job can return to it after any amount of generation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/engine.h"
#include "engine/generation.h"
#include "model/model.h"

namespace ringlm::engine {

class Generator {
 public:
  explicit Generator(Engine& engine, const model::SessionOptions& options = {});

  // Generates a continuation of `prompt`. Throws ringlm::Error for a bad request (empty or
  // too long prompt, schema that does not compile); the session stays usable.
  GenerationResult generate(std::span<const std::int32_t> prompt, const GenerationParams& params,
                            const TokenCallback& on_token);

  // Prefills `prefix` (reusing what the cache already holds) and snapshots the KV state
  // after it, so later prompts starting with it never recompute it.
  void pin_prefix(std::span<const std::int32_t> prefix);

  // Tokens whose keys and values the session holds, in position order.
  std::span<const std::int32_t> cached_tokens() const { return cached_; }
  model::Session& session() { return session_; }
  Engine& engine() { return engine_; }
  void reset();

 private:
  // Makes the cache hold a prefix of `prompt` (as long as possible, at most size - 1 tokens
  // so there is a last token to compute logits from) and returns its length.
  std::size_t reuse_prefix(std::span<const std::int32_t> prompt);
  std::span<float> run_tokens(std::span<const std::int32_t> ids);

  Engine& engine_;
  model::Session session_;
  std::vector<std::int32_t> cached_;
  std::vector<std::uint32_t> mask_;
  std::vector<std::int64_t> positions_;
  std::vector<std::int32_t> pending_;
  std::vector<std::int32_t> pinned_;
  model::SessionSnapshot snapshot_;
};

}  // namespace ringlm::engine
