#include "engine/generator.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <string>

#include "chat/stop_rules.h"
#include "engine/batch_scheduler.h"
#include "engine/token_respelling.h"
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
  o.kv_type = engine.options().kv_type;
  return o;
}
}  // namespace

std::size_t first_soft_token(const PromptEmbeddings* media, std::size_t prompt_size, int hidden) {
  if (!media || media->positions.empty()) return SIZE_MAX;
  if (media->hidden != hidden || media->rows.size() != media->positions.size() * static_cast<std::size_t>(hidden))
    fail("prompt embeddings: ", media->positions.size(), " rows of width ", media->hidden,
         " do not fit the model's hidden size ", hidden);
  for (std::size_t i = 0; i < media->positions.size(); ++i)
    if (media->positions[i] < 0 || static_cast<std::size_t>(media->positions[i]) >= prompt_size ||
        (i > 0 && media->positions[i] <= media->positions[i - 1]))
      fail("prompt embeddings: position ", media->positions[i], " is not an increasing index into the ",
           prompt_size, "-token prompt");
  return static_cast<std::size_t>(media->positions.front());
}

Generator::Generator(Engine& engine, const model::SessionOptions& options)
    : engine_(engine), session_(engine.model(), with_engine_defaults(engine, options)) {
  mask_.resize((static_cast<std::size_t>(engine.tokenizer().vocab_size()) + 31) / 32);
  positions_.reserve(model::Session::kMaxChunk);
  pending_.reserve(model::Session::kMaxChunk);
  HeadSubsetPolicy policy;
  switch (engine.options().lm_head_subset) {
    case EngineOptions::HeadSubset::Auto: policy.mode = HeadSubsetPolicy::Mode::Auto; break;
    case EngineOptions::HeadSubset::Always: policy.mode = HeadSubsetPolicy::Mode::Always; break;
    case EngineOptions::HeadSubset::Never: policy.mode = HeadSubsetPolicy::Mode::Never; break;
  }
  set_head_subset(policy);
}

Generator::~Generator() = default;

void Generator::set_head_subset(const HeadSubsetPolicy& policy) {
  if (!(policy.max_share >= 0.0 && policy.max_share <= 1.0))
    fail("LM-head subset share must be in [0, 1], got ", policy.max_share);
  head_policy_ = policy;
  const std::size_t vocab = static_cast<std::size_t>(engine_.model()->config().vocab_size);
  switch (policy.mode) {
    case HeadSubsetPolicy::Mode::Never: head_row_limit_ = 0; break;
    case HeadSubsetPolicy::Mode::Always: head_row_limit_ = vocab; break;
    case HeadSubsetPolicy::Mode::Auto:
      head_row_limit_ = static_cast<std::size_t>(policy.max_share * static_cast<double>(vocab));
      break;
  }
  // Sized once here, so no guided step allocates.
  head_ids_.reserve(head_row_limit_);
  session_.reserve_head_rows(head_row_limit_);
  if (drafting_) drafting_->set_head_subset(policy);
}

void Generator::reset() {
  session_.reset();
  cached_.clear();
  pinned_.clear();
  media_from_ = SIZE_MAX;
  drafting_.reset();
}

std::span<float> Generator::run_tokens(std::span<const std::int32_t> ids, bool with_head) {
  const std::int64_t start = static_cast<std::int64_t>(cached_.size());
  std::span<const float> logits;
  if (ids.size() == 1 && with_head) {
    logits = session_.decode(ids[0], start);
  } else {
    positions_.resize(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) positions_[i] = start + static_cast<std::int64_t>(i);
    logits = session_.prefill(ids, positions_, with_head ? model::LogitsMode::Last : model::LogitsMode::Hidden);
  }
  cached_.insert(cached_.end(), ids.begin(), ids.end());
  // The row lives in the session's scratch buffer, which the sampler may edit in place.
  return {const_cast<float*>(logits.data()), logits.size()};
}

bool Generator::collect_allowed_rows() {
  head_ids_.clear();
  if (head_row_limit_ == 0) return false;
  // A head computes single rows or whole 16-row groups (each the half of a mask word).
  static_assert(kernels::kQ4GroupRows == 16);
  const std::size_t vocab = static_cast<std::size_t>(engine_.model()->config().vocab_size);
  if (session_.head_row_granularity() >= vocab) return false;  // this head only runs whole
  const bool grouped = session_.head_row_granularity() != 1;
  std::size_t cost = 0;  // rows the subset head computes
  for (std::size_t w = 0; w < mask_.size(); ++w) {
    std::uint32_t bits = mask_[w];
    if (bits == 0) continue;
    cost += grouped ? 16 * (((bits & 0xffffu) != 0) + ((bits >> 16) != 0)) : static_cast<std::size_t>(std::popcount(bits));
    if (cost > head_row_limit_) return false;
    for (; bits != 0; bits &= bits - 1) {
      const std::size_t id = w * 32 + static_cast<std::size_t>(std::countr_zero(bits));
      if (id >= vocab) break;  // a tokenizer larger than the model: the sampler reports it
      head_ids_.push_back(static_cast<std::int32_t>(id));
    }
  }
  return true;
}

std::span<float> Generator::guided_logits(bool* subset) {
  *subset = collect_allowed_rows();
  return *subset ? session_.head_logits_rows(head_ids_) : session_.head_logits();
}

std::size_t Generator::reuse_prefix(std::span<const std::int32_t> prompt, std::size_t max_reuse) {
  const std::size_t limit = std::min({prompt.size() - 1, max_reuse, media_from_});
  std::size_t common = 0;
  while (common < cached_.size() && common < limit && cached_[common] == prompt[common]) ++common;
  if (common == cached_.size()) return common;
  if (common <= media_from_) media_from_ = SIZE_MAX;  // the soft-token KV goes with the truncation
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

void Generator::check_request(std::span<const std::int32_t> prompt, const GenerationParams& params) const {
  const Tokenizer& tok = engine_.tokenizer();
  if (prompt.empty()) fail("the prompt is empty");
  if (params.max_tokens < 0) fail("max_tokens must be >= 0, got ", params.max_tokens);
  const std::int64_t capacity = session_.context_capacity();
  if (static_cast<std::int64_t>(prompt.size()) >= capacity)
    fail_limit("the prompt has ", prompt.size(), " tokens; the context holds ", capacity);
  for (auto id : prompt)
    if (id < 0 || id >= tok.vocab_size()) fail("prompt token id ", id, " is outside the vocabulary (", tok.vocab_size(), ")");
}

std::span<const std::int32_t> Generator::in_cached_spelling(std::span<const std::int32_t> prompt,
                                                            std::span<const std::int32_t> cached) {
  const std::span<const std::int32_t> comparable = cached;
  if (comparable.empty() || respell_like_cache(engine_.tokenizer(), comparable, prompt, respelled_) == 0)
    return prompt;
  if (static_cast<std::int64_t>(respelled_.size()) >= session_.context_capacity()) return prompt;
  return respelled_;
}

std::span<float> Generator::run_prompt(std::span<const std::int32_t> prompt, const GenerationParams& params,
                                       GenerationResult& result, bool with_head) {
  // Soft tokens: every one of them is recomputed (reuse stops before the first), and they
  // replace the embeddings of their prompt positions while the prompt runs.
  const PromptEmbeddings* media = params.prompt_embeddings.get();
  const std::size_t media_first =
      first_soft_token(media, prompt.size(), engine_.model()->config().hidden_size);
  // Soft-token positions index the prompt as given, and the cache past media_from_ holds
  // placeholder ids: neither may be respelled.
  if (media_first == SIZE_MAX)
    prompt = in_cached_spelling(prompt, std::span<const std::int32_t>(cached_).first(std::min(cached_.size(), media_from_)));
  result.prompt_tokens = static_cast<int>(prompt.size());
  const std::size_t reused = reuse_prefix(prompt, media_first);
  result.cached_prompt_tokens = static_cast<int>(reused);
  if (media_first != SIZE_MAX) {
    overrides_.clear();
    for (std::size_t i = 0; i < media->positions.size(); ++i)
      overrides_.push_back({media->positions[i], media->rows.data() + i * static_cast<std::size_t>(media->hidden)});
    session_.set_embedding_overrides(overrides_);
  }
  std::span<float> logits;
  try {
    logits = run_tokens(prompt.subspan(reused), with_head);
  } catch (...) {
    session_.set_embedding_overrides({});
    throw;
  }
  session_.set_embedding_overrides({});
  if (media_first != SIZE_MAX) media_from_ = std::min(media_from_, media_first);
  return logits;
}

GenerationResult Generator::generate_drafted(std::span<const std::int32_t> prompt, const GenerationParams& params,
                                             const TokenCallback& on_token) {
  check_request(prompt, params);
  const int k = params.draft.max_tokens;
  if (k < 1 || k > kMaxDraftTokens) fail("draft max_tokens must be in 1..", kMaxDraftTokens, ", got ", k);
  if (!drafting_ || drafting_max_ < k) {
    drafting_.reset();  // its logits rows are sized for draft_max: made again, larger
    drafting_ = std::make_unique<BatchScheduler>(
        engine_, BatchSchedulerOptions{.max_sequences = 1,
                                       .context_tokens = static_cast<int>(session_.context_capacity()),
                                       .draft_max = k});
    drafting_->set_head_subset(head_policy_);
    drafting_max_ = k;
  }
  // A follow-up turn is respelled like the cache that scheduler holds, as run_prompt does
  // (that cache never holds soft tokens: the scheduler drops them when their request ends).
  if (!params.prompt_embeddings) prompt = in_cached_spelling(prompt, drafting_->slot_cached(0));
  return drafting_->generate(std::vector<std::int32_t>(prompt.begin(), prompt.end()), params, on_token);
}

GenerationResult Generator::generate(std::span<const std::int32_t> prompt, const GenerationParams& params,
                                     const TokenCallback& on_token) {
  if (params.embedding) fail("internal error: embedding requests run in the batch scheduler (engine::BatchLoop), not Generator");
  if (params.draft.source != DraftSource::none) return generate_drafted(prompt, params, on_token);
  const auto t0 = Clock::now();
  const Tokenizer& tok = engine_.tokenizer();
  check_request(prompt, params);
  const std::int64_t capacity = session_.context_capacity();

  // The request's guided-decoding work limit, charged on this thread (guided/work_budget.h).
  guided::BudgetAccount budget(params.mask_budget);
  guided::ScopedBudgetBinding charge(budget);
  std::unique_ptr<guided::Matcher> matcher;
  if (auto grammar = engine_.grammar_for(params)) {
    matcher = std::make_unique<guided::Matcher>(std::move(grammar));
    matcher->set_thinking_budget(params.thinking_budget);
  }

  sampling::Sampler sampler(params.sampling, tok.vocab_size());
  sampler.enable_logprobs(params.logprobs);
  StreamingDecoder detok(tok);
  chat::StopStringMatcher stop_strings(params.stop);
  const chat::StopIds& stop_ids = engine_.stop_ids();

  GenerationResult result;
  // Guided steps run without the LM head: the grammar mask comes first and decides how much
  // of the head to compute (guided_logits).
  std::span<float> logits = run_prompt(prompt, params, result, matcher == nullptr);

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
    if (params.logprobs && params.top_logprobs > 0) {
      if (sampled)
        sampler.top_logprobs(logits, params.top_logprobs, event.top);
      else
        event.top.push_back({id, 0.0f});  // forced by the grammar: the only possible token
    }
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
      bool subset = false;
      logits = guided_logits(&subset);
      ++result.guided_steps;
      result.subset_head_steps += subset;
    }
    const std::int32_t id = sampler.sample(logits, allowed, generated);
    if (stop_ids.contains(id) && !params.ignore_stop_ids) {
      result.finish = FinishReason::Stop;
      break;
    }
    if (matcher && !matcher->accept(static_cast<std::uint32_t>(id)))
      fail_internal("the sampler chose token ", id, " outside the grammar mask");
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
        if (!matcher->accept(f)) fail_internal("the grammar rejected its own forced token ", f);
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
    logits = run_tokens(pending_, matcher == nullptr);
  }
  if (result.finish != FinishReason::Cancelled) {
    // Text held back for a possible multi-token character or stop string goes into the
    // result only: the stream is a prefix of result.text, and callers send the rest.
    std::string tail = detok.flush();
    std::string released;
    if (!stop_strings.stopped()) {
      stop_strings.push(tail, released);
      stop_strings.flush(released);
    }
    result.text += released;
  }
  result.total_s = seconds_since(t0);
  return result;
}

}  // namespace ringlm::engine
