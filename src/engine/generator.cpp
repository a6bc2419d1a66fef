#include "engine/generator.h"

#include <algorithm>
#include <chrono>

#include "chat/stop_rules.h"
#include "sampling/sampler.h"
#include "util/error.h"

namespace ringlm::engine {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
}  // namespace

namespace {
model::SessionOptions with_engine_defaults(const Engine& engine, model::SessionOptions o) {
  if (o.context_tokens == 0) o.context_tokens = engine.options().context_tokens;
  return o;
}
}  // namespace

Generator::Generator(Engine& engine, const model::SessionOptions& options)
    : engine_(engine), session_(engine.model(), with_engine_defaults(engine, options)) {
  mask_.resize((static_cast<std::size_t>(engine.tokenizer().vocab_size()) + 31) / 32);
  positions_.reserve(model::Session::kMaxChunk);
  pending_.reserve(model::Session::kMaxChunk);
}

void Generator::reset() {
  session_.reset();
  cached_.clear();
  pinned_.clear();
}

std::span<float> Generator::run_tokens(std::span<const std::int32_t> ids) {
  const std::int64_t start = static_cast<std::int64_t>(cached_.size());
  std::span<const float> logits;
  if (ids.size() == 1) {
    logits = session_.decode(ids[0], start);
  } else {
    positions_.resize(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) positions_[i] = start + static_cast<std::int64_t>(i);
    logits = session_.prefill(ids, positions_, model::LogitsMode::Last);
  }
  cached_.insert(cached_.end(), ids.begin(), ids.end());
  // The row lives in the session's scratch buffer, which the sampler may edit in place.
  return {const_cast<float*>(logits.data()), logits.size()};
}

std::size_t Generator::reuse_prefix(std::span<const std::int32_t> prompt) {
  const std::size_t limit = prompt.size() - 1;
  std::size_t common = 0;
  while (common < cached_.size() && common < limit && cached_[common] == prompt[common]) ++common;
  if (common == cached_.size()) return common;
  // While a prefix is pinned the cache always starts with it; leaving it (writing below its
  // end) makes the snapshot stale.
  const bool keeps_pin = !pinned_.empty() && common >= pinned_.size();
  if (!keeps_pin) pinned_.clear();
  try {
    session_.truncate(static_cast<std::int64_t>(common));
    cached_.resize(common);
    return common;
  } catch (const Error&) {
    // The sliding rings no longer hold what position `common` needs.
  }
  if (keeps_pin) {
    session_.restore(snapshot_);
    cached_.assign(pinned_.begin(), pinned_.end());
    return cached_.size();
  }
  reset();
  return 0;
}

void Generator::pin_prefix(std::span<const std::int32_t> prefix) {
  if (prefix.empty()) return;
  // Make the cache hold exactly `prefix`.
  std::vector<std::int32_t> with_sentinel(prefix.begin(), prefix.end());
  with_sentinel.push_back(0);
  const std::size_t have = reuse_prefix(with_sentinel);
  if (have < prefix.size()) {
    std::span<const std::int32_t> rest = prefix.subspan(have);
    const std::int64_t start = static_cast<std::int64_t>(cached_.size());
    std::vector<std::int64_t> pos(rest.size());
    for (std::size_t i = 0; i < rest.size(); ++i) pos[i] = start + static_cast<std::int64_t>(i);
    session_.prefill(rest, pos, model::LogitsMode::None);
    cached_.insert(cached_.end(), rest.begin(), rest.end());
  }
  session_.snapshot(snapshot_);
  pinned_.assign(prefix.begin(), prefix.end());
}

GenerationResult Generator::generate(std::span<const std::int32_t> prompt, const GenerationParams& params,
                                     const TokenCallback& on_token) {
  const auto t0 = Clock::now();
  const Tokenizer& tok = engine_.tokenizer();
  if (prompt.empty()) fail("the prompt is empty");
  if (params.max_tokens < 0) fail("max_tokens must be >= 0, got ", params.max_tokens);
  const std::int64_t capacity = session_.context_capacity();
  if (static_cast<std::int64_t>(prompt.size()) >= capacity)
    fail("the prompt has ", prompt.size(), " tokens; the context holds ", capacity);
  for (auto id : prompt)
    if (id < 0 || id >= tok.vocab_size()) fail("prompt token id ", id, " is outside the vocabulary (", tok.vocab_size(), ")");

  std::unique_ptr<guided::Matcher> matcher;
  if (!params.json_schema.empty())
    matcher = std::make_unique<guided::Matcher>(engine_.grammar_for_schema(params.json_schema));
  else if (params.json_object)
    matcher = std::make_unique<guided::Matcher>(engine_.grammar_for_any_object());

  sampling::Sampler sampler(params.sampling, tok.vocab_size());
  sampler.enable_logprobs(params.logprobs);
  StreamingDecoder detok(tok);
  chat::StopStringMatcher stop_strings(params.stop);
  const chat::StopIds& stop_ids = engine_.stop_ids();

  GenerationResult result;
  result.prompt_tokens = static_cast<int>(prompt.size());
  const std::size_t reused = reuse_prefix(prompt);
  result.cached_prompt_tokens = static_cast<int>(reused);
  std::span<float> logits = run_tokens(prompt.subspan(reused));

  std::vector<std::int32_t> generated;
  generated.reserve(static_cast<std::size_t>(params.max_tokens));
  TokenEvent event;
  std::string piece;
  bool done = params.max_tokens == 0;
  result.finish = done ? FinishReason::Length : FinishReason::Stop;

  // Emits one accepted token; false when generation must end (stop string, cancel, length).
  auto emit = [&](std::int32_t id, float logprob, bool sampled) -> bool {
    generated.push_back(id);
    ++result.completion_tokens;
    piece.clear();
    detok.push_into(id, piece);
    event.id = id;
    event.text.clear();
    stop_strings.push(piece, event.text);
    event.logprob = logprob;
    event.top.clear();
    if (sampled && params.logprobs && params.top_logprobs > 0) sampler.top_logprobs(logits, params.top_logprobs, event.top);
    result.text += event.text;
    if (result.completion_tokens == 1) result.ttft_s = seconds_since(t0);
    if (on_token && !on_token(event)) {
      result.finish = FinishReason::Cancelled;
      return false;
    }
    if (stop_strings.stopped()) {
      result.finish = FinishReason::Stop;
      return false;
    }
    if (result.completion_tokens >= params.max_tokens) {
      result.finish = FinishReason::Length;
      return false;
    }
    return true;
  };

  while (!done) {
    const std::uint32_t* allowed = nullptr;
    if (matcher) {
      matcher->fill_mask(mask_.data());
      allowed = mask_.data();
    }
    const std::int32_t id = sampler.sample(logits, allowed, generated);
    if (stop_ids.contains(id) && !params.ignore_stop_ids) {
      result.finish = FinishReason::Stop;
      break;
    }
    if (matcher && !matcher->accept(static_cast<std::uint32_t>(id)))
      fail("internal error: the sampler chose token ", id, " outside the grammar mask");
    if (!emit(id, sampler.chosen_logprob(), true)) break;

    // Fast-forward: tokens the grammar forces go through the model as one chunk.
    pending_.assign(1, id);
    if (matcher) {
      for (std::uint32_t f : matcher->forced_tokens()) {
        if (stop_ids.contains(static_cast<std::int32_t>(f))) {
          done = true;
          result.finish = FinishReason::Stop;
          break;
        }
        if (pending_.size() == static_cast<std::size_t>(model::Session::kMaxChunk)) break;
        if (!matcher->accept(f)) fail("internal error: the grammar rejected its own forced token ", f);
        if (!emit(static_cast<std::int32_t>(f), 0.0f, false)) {  // forced: probability 1
          done = true;
          break;
        }
        pending_.push_back(static_cast<std::int32_t>(f));
      }
      if (done) break;
    }
    if (static_cast<std::int64_t>(cached_.size() + pending_.size()) >= capacity) {
      result.finish = FinishReason::Length;  // the context is full
      break;
    }
    logits = run_tokens(pending_);
  }
  if (result.finish != FinishReason::Cancelled) {
    // Release text held back for a possible multi-token character or stop string.
    event.text.clear();
    std::string tail = detok.flush();
    if (!stop_strings.stopped()) {
      stop_strings.push(tail, event.text);
      stop_strings.flush(event.text);
    }
    if (!event.text.empty()) {
      result.text += event.text;
      event.id = -1;
      event.logprob = 0.0f;
      event.top.clear();
      if (on_token) on_token(event);
    }
  }
  result.total_s = seconds_since(t0);
  return result;
}

}  // namespace ringlm::engine
