#include "engine/batch_scheduler.h"
#include "engine/batch_slot.h"
#include "engine/assistant_drafter.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "chat/stop_rules.h"
#include "guided/matcher.h"
#include "guided/work_budget.h"
#include "sampling/sampler.h"
#include "util/error.h"

namespace ringlm::engine {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// After a step ran a prompt chunk of `s`: counts it, and offers the prompt blocks that chunk
// completed to the prefix cache (if any) while the sliding rings still hold them.
void note_prompt_chunk(BatchScheduler::Slot& s, PrefixCache* cache) {
  s.prompt_done += s.step_ids.size();
  const std::size_t storable = std::min(s.prompt_done, s.cache_limit);
  if (cache && storable / PrefixCache::kBlockTokens > s.cache_stored / PrefixCache::kBlockTokens) {
    cache->insert(s.prompt, storable, s.session);
    s.cache_stored = storable;
  }
}

// An embedding request's result: the mean of the hidden rows its prompt summed.
void pool_mean(BatchScheduler::Slot& s) {
  const float inv = 1.0f / static_cast<float>(s.prompt.size());
  s.result.embedding.resize(s.hidden_sum.size());
  for (std::size_t j = 0; j < s.hidden_sum.size(); ++j) s.result.embedding[j] = s.hidden_sum[j] * inv;
}
}  // namespace

BatchScheduler::BatchScheduler(Engine& engine, const BatchSchedulerOptions& options)
    : engine_(engine), options_(options) {
  if (options_.max_sequences < 1) fail("batch: at least one sequence is needed, got ", options_.max_sequences);
  if (options_.draft_max < 0 || options_.draft_max > 16) fail("batch: draft_max must be in 0..16, got ", options_.draft_max);
  if (options_.max_rows == 0)
    options_.max_rows = options_.max_sequences * (1 + options_.draft_max) + model::Session::kMaxChunk;
  if (options_.max_rows < options_.max_sequences + model::Session::kMaxChunk)
    fail("batch: ", options_.max_rows, " rows per step; at least max_sequences + ", model::Session::kMaxChunk,
         " are needed (every decode row plus one prompt chunk)");
  model::SessionOptions so;
  so.context_tokens = options_.context_tokens != 0 ? options_.context_tokens : engine.options().context_tokens;
  so.kv_type = engine.options().kv_type;
  const std::size_t words = (static_cast<std::size_t>(engine.tokenizer().vocab_size()) + 31) / 32;
  for (int i = 0; i < options_.max_sequences; ++i) {
    slots_.push_back(std::make_unique<Slot>(engine.model(), so, words));
    slots_.back()->positions.reserve(model::Session::kMaxChunk);
    slots_.back()->pending.reserve(model::Session::kMaxChunk);
    slots_.back()->draft.reserve(model::Session::kMaxChunk);
    slots_.back()->row_chunk.reserve(model::Session::kMaxChunk);
  }
  batch_ = std::make_unique<model::BatchForward>(
      engine.model(), model::BatchOptions{.max_rows = options_.max_rows,
                                          .max_items = options_.max_sequences,
                                          .max_logits_rows = options_.max_sequences * (1 + options_.draft_max),
                                          .keep_hidden_rows = options_.draft_max > 0,
                                          .greedy_head = engine.options().greedy_head});
  items_.reserve(slots_.size());
  item_slot_.reserve(slots_.size());
  full_head_.reserve(slots_.size());
  full_head_slot_.reserve(slots_.size());
  if (options_.prefix_cache_bytes > 0) prefix_cache_ = std::make_unique<PrefixCache>(options_.prefix_cache_bytes);
  HeadSubsetPolicy policy;
  if (const char* env = std::getenv("RINGLM_LM_HEAD_SUBSET")) {
    const std::string v = env;
    if (v == "always") policy.mode = HeadSubsetPolicy::Mode::Always;
    else if (v == "never") policy.mode = HeadSubsetPolicy::Mode::Never;
  }
  set_head_subset(policy);
}

BatchScheduler::~BatchScheduler() {
  // RINGLM_GREEDY_HEAD_STATS=1: the greedy head's counters on stderr (bench: candidate counts).
  const char* e = std::getenv("RINGLM_GREEDY_HEAD_STATS");
  const model::GreedyHead::Stats* g = batch_ ? batch_->greedy_head_stats() : nullptr;
  if (e && *e == '1' && g && g->rows > 0) {
    const double exact = static_cast<double>(g->rows - g->fallback_rows);
    std::fprintf(stderr, "greedy head: %llu rows, %llu fell back; per exact row %.1f candidates in %.1f groups\n",
                 static_cast<unsigned long long>(g->rows), static_cast<unsigned long long>(g->fallback_rows),
                 exact > 0 ? static_cast<double>(g->candidates) / exact : 0.0,
                 exact > 0 ? static_cast<double>(g->groups) / exact : 0.0);
  }
}

void BatchScheduler::set_head_subset(const HeadSubsetPolicy& policy) {
  head_policy_ = policy;
  const std::size_t vocab = static_cast<std::size_t>(engine_.model()->config().vocab_size);
  switch (policy.mode) {
    case HeadSubsetPolicy::Mode::Never: head_row_limit_ = 0; break;
    case HeadSubsetPolicy::Mode::Always: head_row_limit_ = vocab; break;
    case HeadSubsetPolicy::Mode::Auto:
      head_row_limit_ = static_cast<std::size_t>(policy.max_share * static_cast<double>(vocab));
      break;
  }
  for (auto& s : slots_) {
    s->head_ids.reserve(head_row_limit_);
    s->session.reserve_head_rows(head_row_limit_);
  }
}

bool BatchScheduler::has_room() const {
  for (const auto& s : slots_)
    if (!s->busy) return true;
  return false;
}

int BatchScheduler::active() const {
  int n = 0;
  for (const auto& s : slots_) n += s->busy;
  return n;
}

int BatchScheduler::context_capacity() const { return slots_[0]->session.context_capacity(); }

std::size_t BatchScheduler::kv_bytes() const {
  std::size_t b = pinned_session_ ? pinned_session_->kv_bytes() : 0;
  for (const auto& s : slots_) b += s->session.kv_bytes();
  return b;
}

std::int64_t BatchScheduler::kv_tokens_used() const {
  std::int64_t n = 0;
  for (const auto& s : slots_) n += static_cast<std::int64_t>(s->cached.size());
  return n;
}

GenerationResult BatchScheduler::generate(std::vector<std::int32_t> prompt, const GenerationParams& params,
                                          const TokenCallback& on_token) {
  if (active() != 0) fail("internal error: BatchScheduler::generate with other sequences in flight");
  std::optional<SequenceOutcome> outcome;
  admit({std::move(prompt), params, on_token, [&outcome](SequenceOutcome&& o) { outcome = std::move(o); }});
  while (!outcome && step() > 0) {
  }
  if (!outcome) fail("internal error: a request ended without an outcome");
  if (!outcome->error.empty()) throw Error(outcome->error);
  return std::move(outcome->result);
}

std::span<const std::int32_t> BatchScheduler::slot_cached(int i) const { return slots_.at(static_cast<std::size_t>(i))->cached; }

void BatchScheduler::pin_prefix(std::span<const std::int32_t> prefix) {
  pinned_.clear();
  if (prefix.empty()) return;
  if (!pinned_session_) {
    model::SessionOptions so;
    so.context_tokens = context_capacity();
    so.kv_type = engine_.options().kv_type;  // the slots copy its prefix: same element type
    pinned_session_ = std::make_unique<model::Session>(engine_.model(), so);
  }
  pinned_session_->reset();
  std::vector<std::int64_t> pos(prefix.size());
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int64_t>(i);
  pinned_session_->prefill(prefix, pos, model::LogitsMode::None);
  pinned_.assign(prefix.begin(), prefix.end());
}

std::uint64_t BatchScheduler::admit(SequenceRequest request) {
  const Tokenizer& tok = engine_.tokenizer();
  const auto& prompt = request.prompt;
  const GenerationParams& params = request.params;
  if (prompt.empty()) fail("the prompt is empty");
  if (params.max_tokens < 0) fail("max_tokens must be >= 0, got ", params.max_tokens);
  const std::int64_t capacity = context_capacity();
  // A generation needs room for one token after its prompt; an embedding only the prompt.
  if (static_cast<std::int64_t>(prompt.size()) > capacity - (params.embedding ? 0 : 1))
    fail_limit("the prompt has ", prompt.size(), " tokens; the context holds ", capacity);
  for (auto id : prompt)
    if (id < 0 || id >= tok.vocab_size()) fail("prompt token id ", id, " is outside the vocabulary (", tok.vocab_size(), ")");
  // Everything that can fail for this request is built here, before a slot is chosen or
  // touched: a throw below leaves the scheduler exactly as it was (issue #28: a sampler that
  // threw after the slot was marked busy left a busy slot without a sampler, and the next
  // step crashed). What follows the slot choice only moves these into it.
  std::unique_ptr<guided::Matcher> matcher;
  if (auto grammar = engine_.grammar_for(params)) {
    matcher = std::make_unique<guided::Matcher>(std::move(grammar));
    matcher->set_thinking_budget(params.thinking_budget);
  }
  sampling::Sampler sampler(params.sampling, tok.vocab_size());
  sampler.enable_logprobs(params.logprobs);
  chat::StopStringMatcher stop_strings(params.stop);
  std::unique_ptr<Drafter> drafter;
  if (options_.draft_max > 0 && params.draft.source == DraftSource::assistant)
    drafter = std::make_unique<AssistantDrafter>(load_assistant(engine_, params.draft.assistant_path), engine_.model(),
                                                 params.sampling);
  else if (options_.draft_max > 0)
    drafter = make_drafter(params.draft, tok.vocab_size());
  std::vector<std::int32_t> generated;
  generated.reserve(static_cast<std::size_t>(params.max_tokens));

  // Soft tokens: placeholder ids do not identify the image, so no cached KV is reused from the
  // first soft-token position on.
  const PromptEmbeddings* media = params.prompt_embeddings.get();
  const std::size_t media_first =
      first_soft_token(media, prompt.size(), engine_.model()->config().hidden_size);

  // The free slot whose cache shares the longest prefix with the prompt (at most size - 1
  // tokens: the last one must run to give logits).
  // An embedding needs every prompt token's hidden state: nothing cached is reused.
  const std::size_t limit = params.embedding ? 0 : std::min(prompt.size() - 1, media_first);
  auto common_prefix = [&](const Slot& s) {
    std::size_t n = 0;
    while (n < s.cached.size() && n < limit && s.cached[n] == prompt[n]) ++n;
    return n;
  };
  Slot* slot = nullptr;
  std::size_t best = 0;
  for (auto& s : slots_) {
    if (s->busy) continue;
    const std::size_t c = options_.reuse_slot_cache ? common_prefix(*s) : 0;
    if (!slot || c > best) slot = s.get(), best = c;
  }
  if (!slot) fail("batch: all ", slots_.size(), " sequences are busy");
  if (params.embedding && engine_.model()->device_weights())
    fail_unsupported("embeddings are computed on the CPU only; this model runs on a device");

  Slot& s = *slot;
  std::size_t reused = best;
  if (reused < s.cached.size()) {
    try {
      s.session.truncate(static_cast<std::int64_t>(reused));
      s.cached.resize(reused);
    } catch (const Error&) {  // the sliding rings no longer hold what position `reused` needs
      s.session.reset();
      s.cached.clear();
      reused = 0;
    }
  }
  const bool pin_applies = !pinned_.empty() && pinned_.size() <= limit &&
                           std::equal(pinned_.begin(), pinned_.end(), prompt.begin());
  if (pin_applies && reused < pinned_.size()) {
    try {
      s.session.copy_prefix_from(*pinned_session_, static_cast<std::int64_t>(pinned_.size()));
    } catch (...) {  // the free slot's cache is left empty and consistent, not half-copied
      s.session.reset();
      s.cached.clear();
      throw;
    }
    s.cached = pinned_;
    reused = pinned_.size();
    ++stats_.prefix_copies;
  }
  if (prefix_cache_ && limit >= PrefixCache::kBlockTokens) {
    const std::size_t held = prefix_cache_->lookup(prompt, limit);
    std::size_t supplied = 0;
    if (held > reused) {
      try {
        prefix_cache_->restore(prompt, held, s.session);
        s.cached.assign(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(held));
        supplied = held - reused;
        reused = held;
      } catch (const Error&) {  // the slot's rings could not take it: compute from scratch
        s.session.reset();
        s.cached.clear();
        reused = 0;
      }
    }
    prefix_cache_->record(supplied);
  }
  stats_.reused_tokens += reused;
  stats_.prefix_hits += reused > 0;
  stats_.prefix_misses += reused == 0 && limit >= PrefixCache::kBlockTokens;

  s.detok.emplace(tok);
  s.cancel_requested = false;
  s.id = next_id_++;
  s.order = s.id;
  s.prompt = std::move(request.prompt);
  s.params = std::move(request.params);
  s.on_token = std::move(request.on_token);
  s.on_done = std::move(request.on_done);
  s.prompt_done = reused;
  s.cache_limit = std::min(s.prompt.size(), media_first);
  s.cache_stored = 0;
  s.matcher = std::move(matcher);
  s.budget = guided::BudgetAccount(s.params.mask_budget);
  s.overrides.clear();
  s.media.reset();
  if (media_first != SIZE_MAX) {
    s.media = s.params.prompt_embeddings;
    for (std::size_t i = 0; i < s.media->positions.size(); ++i)
      s.overrides.push_back({s.media->positions[i], s.media->rows.data() + i * static_cast<std::size_t>(s.media->hidden)});
  }
  s.session.set_embedding_overrides(s.overrides);
  s.sampler.emplace(std::move(sampler));
  s.stop_strings = std::move(stop_strings);
  s.result = GenerationResult{};
  s.result.prompt_tokens = static_cast<int>(s.prompt.size());
  s.result.cached_prompt_tokens = static_cast<int>(reused);
  s.generated = std::move(generated);
  s.pending.clear();
  // Sized per request, not per token (the decode path allocates nothing).
  if (s.params.embedding) s.hidden_sum.assign(static_cast<std::size_t>(engine_.model()->config().hidden_size), 0.0f);
  s.drafter = std::move(drafter);
  s.hidden_known = false;
  if (s.drafter && s.drafter->wants_target_state())
    s.target_hidden.resize(static_cast<std::size_t>(engine_.model()->config().hidden_size));
  s.draft_max = std::min(s.params.draft.max_tokens, options_.draft_max);
  s.governor = DraftGovernor(s.params.draft.adaptive);
  s.n_draft = 0;
  s.pending_chunk = false;
  s.t0 = Clock::now();
  s.busy = true;  // last: only now does step() look at this slot
  return s.id;
}

void BatchScheduler::cancel(std::uint64_t id) {
  for (auto& s : slots_)
    if (s->busy && s->id == id) s->cancel_requested = true;
}

void BatchScheduler::cancel_all() {
  for (auto& s : slots_)
    if (s->busy) s->cancel_requested = true;
}

void BatchScheduler::finish(Slot& s, FinishReason reason, std::string error) {
  s.result.finish = reason;
  if (reason != FinishReason::Cancelled && error.empty()) {
    // Text held back for a possible multi-token character or stop string goes into the
    // result only: the stream is a prefix of result.text (as Generator::generate).
    std::string tail = s.detok->flush();
    std::string released;
    if (!s.stop_strings.stopped()) {
      s.stop_strings.push(tail, released);
      s.stop_strings.flush(released);
    }
    s.result.text += released;
  }
  s.result.total_s = seconds_since(s.t0);
  s.busy = false;
  s.matcher.reset();
  s.session.set_embedding_overrides({});
  if (s.media) {
    // The soft tokens' KV must not be reused by a later request with the same placeholder ids.
    s.session.reset();
    s.cached.clear();
    s.media.reset();
    s.overrides.clear();
  }
  auto done = std::move(s.on_done);
  s.on_token = nullptr;
  s.on_done = nullptr;
  SequenceOutcome out{std::move(s.result), std::move(error)};
  if (done) done(std::move(out));
}

int BatchScheduler::step() {
  for (auto& s : slots_)
    if (s->busy && s->cancel_requested) finish(*s, FinishReason::Cancelled);

  items_.clear();
  item_slot_.clear();
  const int budget = options_.max_rows;
  int rows = 0;
  auto add = [&](Slot& s, std::span<const std::int32_t> ids, model::LogitsMode mode) {
    const std::int64_t from = static_cast<std::int64_t>(s.cached.size());
    s.positions.resize(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) s.positions[i] = from + static_cast<std::int64_t>(i);
    s.step_ids = ids;
    items_.push_back({&s.session, ids, s.positions, mode});
    items_.back().argmax_only = mode == model::LogitsMode::Last && argmax_only(s);
    item_slot_.push_back(&s);
    rows += static_cast<int>(ids.size());
  };
  const model::LogitsMode decode_mode_guided = model::LogitsMode::Hidden, decode_mode = model::LogitsMode::Last;
  // Decode rows first (a sampled token plus any forced ones), then prompt chunks, oldest
  // request first, while the row budget lasts. A prompt chunk is never split differently:
  // it waits for the next step instead.
  // Drafted rows share what the decode rows leave, less one prompt chunk while any prompt
  // is waiting (drafts never starve a prefill).
  int draft_room = 0;
  int decode_rows = 0, decode_seqs = 0;
  const bool timed = options_.draft_max > 0;
  const Clock::time_point t_step = timed ? Clock::now() : Clock::time_point{};
  if (options_.draft_max > 0) {
    for (auto& sp : slots_)
      if (sp->busy && !sp->prefilling()) decode_rows += static_cast<int>(sp->pending.size()), ++decode_seqs;
    draft_room = budget;
    for (auto& sp : slots_)
      if (sp->busy && !sp->prefilling()) draft_room -= static_cast<int>(sp->pending.size());
    for (auto& sp : slots_)
      if (sp->busy && sp->prefilling()) {
        draft_room -= model::Session::kMaxChunk;
        break;
      }
  }
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (!s.busy || s.prefilling()) continue;
    if (rows + static_cast<int>(s.pending.size()) > budget) continue;
    make_draft(s, std::max(0, draft_room), decode_rows, decode_seqs);
    draft_room -= s.n_draft;
    decode_rows += s.n_draft;
    add(s, s.pending, s.n_draft > 0 ? model::LogitsMode::Last : s.matcher ? decode_mode_guided : decode_mode);
    items_.back().logits_rows = s.n_draft + 1;
    items_.back().row_chunk = s.use_row_chunk ? s.row_chunk.data() : nullptr;
  }
  bool prompt_rows = false;
  for (;;) {
    Slot* next = nullptr;
    for (auto& sp : slots_) {
      Slot& s = *sp;
      if (!s.busy || !s.prefilling()) continue;
      if (std::find(item_slot_.begin(), item_slot_.end(), &s) != item_slot_.end()) continue;
      if (!next || s.order < next->order) next = &s;
    }
    if (!next) break;
    const std::size_t left = next->prompt.size() - next->prompt_done;
    const std::size_t n = std::min<std::size_t>(left, model::Session::kMaxChunk);
    if (rows + static_cast<int>(n) > budget) break;
    const bool last = n == left;
    const model::LogitsMode mode = !last || next->params.embedding ? model::LogitsMode::None
                                   : next->matcher                 ? decode_mode_guided : decode_mode;
    add(*next, std::span<const std::int32_t>(next->prompt).subspan(next->prompt_done, n), mode);
    prompt_rows = true;
    if (next->params.embedding) items_.back().hidden_sum = next->hidden_sum.data();
  }
  if (items_.empty()) return 0;

  try {
    batch_->run(items_);
  } catch (const Error& e) {
    // Validation failed before any session changed; every sequence in it ends with the error.
    for (Slot* s : item_slot_) finish(*s, FinishReason::Stop, e.what());
    return static_cast<int>(item_slot_.size());
  }
  ++stats_.steps;
  stats_.rows += static_cast<std::uint64_t>(rows);
  stats_.sequence_steps += items_.size();
  stats_.last_batch = static_cast<int>(items_.size());

  full_head_.clear();
  full_head_slot_.clear();
  const std::size_t vocab = static_cast<std::size_t>(engine_.model()->config().vocab_size);
  for (std::size_t i = 0; i < items_.size(); ++i) {
    Slot& s = *item_slot_[i];
    s.cached.insert(s.cached.end(), s.step_ids.begin(), s.step_ids.end());
    if (s.prefilling()) {
      note_prompt_chunk(s, prefix_cache_.get());
      if (s.prefilling()) continue;
      if (s.params.embedding) {  // nothing is sampled: the pooled mean is the result
        pool_mean(s);
        finish(s, FinishReason::Stop);
        continue;
      }
      if (s.params.max_tokens == 0) {
        finish(s, FinishReason::Length);
        continue;
      }
    }
    if (s.n_draft > 0) {
      verify(s, i);
      continue;
    }
    if (!s.matcher) {
      advance(s, batch_->logits(i));
      continue;
    }
    guided_head(s, vocab);
  }
  if (!full_head_.empty()) {
    batch_->head_logits(full_head_);
    for (std::size_t j = 0; j < full_head_slot_.size(); ++j) advance(*full_head_slot_[j], batch_->head_row(j));
  }
  if (timed && !prompt_rows) step_costs_.record(rows, std::chrono::duration<double>(Clock::now() - t_step).count());
  return static_cast<int>(items_.size());
}

// A guided row: the mask first; it decides how much of the LM head to compute (a subset of
// rows now, or a place among the step's full heads computed together after the loop).
void BatchScheduler::guided_head(Slot& s, std::size_t vocab) {
  // A request over its mask budget ends alone; the other rows of the step go on.
  try {
    guided::ScopedBudgetBinding charge(s.budget);
    s.matcher->fill_mask(s.mask.data());
  } catch (const std::exception& e) {
    finish(s, FinishReason::Stop, e.what());
    return;
  }
  ++s.result.guided_steps;
  s.head_ids.clear();
  bool subset = head_row_limit_ > 0 && s.session.head_row_granularity() < vocab;
  if (subset) {
    static_assert(kernels::kQ4GroupRows == 16);
    const bool grouped = s.session.head_row_granularity() != 1;
    std::size_t cost = 0;
    for (std::size_t w = 0; w < s.mask.size() && subset; ++w) {
      std::uint32_t bits = s.mask[w];
      if (bits == 0) continue;
      cost += grouped ? 16 * (((bits & 0xffffu) != 0) + ((bits >> 16) != 0)) : static_cast<std::size_t>(std::popcount(bits));
      if (cost > head_row_limit_) {
        subset = false;
        break;
      }
      for (; bits != 0; bits &= bits - 1) {
        const std::size_t id = w * 32 + static_cast<std::size_t>(std::countr_zero(bits));
        if (id >= vocab) break;
        s.head_ids.push_back(static_cast<std::int32_t>(id));
      }
    }
  }
  if (subset) {
    ++s.result.subset_head_steps;
    advance(s, s.session.head_logits_rows(s.head_ids));
  } else {
    full_head_.push_back(&s.session);
    full_head_slot_.push_back(&s);
  }
}

bool BatchScheduler::emit(Slot& s, std::int32_t id, float logprob, bool sampled, std::span<const float> logits) {
  const GenerationParams& params = s.params;
  s.generated.push_back(id);
  ++s.result.completion_tokens;
  s.piece.clear();
  s.detok->push_into(id, s.piece);
  s.event.id = id;
  s.event.text.clear();
  s.stop_strings.push(s.piece, s.event.text);
  s.event.logprob = logprob;
  s.event.top.clear();
  if (params.logprobs && params.top_logprobs > 0) {
    if (sampled) s.sampler->top_logprobs(logits, params.top_logprobs, s.event.top);
    else s.event.top.push_back({id, 0.0f});  // forced by the grammar: the only possible token
  }
  s.result.text += s.event.text;
  if (s.result.completion_tokens == 1) s.result.ttft_s = seconds_since(s.t0);
  if (s.on_token && !s.on_token(s.event)) {
    s.result.finish = FinishReason::Cancelled;
    return false;
  }
  if (s.stop_strings.stopped()) {
    s.result.finish = FinishReason::Stop;
    return false;
  }
  if (s.result.completion_tokens >= params.max_tokens) {
    s.result.finish = FinishReason::Length;
    return false;
  }
  return true;
}

bool BatchScheduler::queue_forced(Slot& s, std::size_t limit) {
  if (!s.matcher) return true;
  const chat::StopIds& stop_ids = engine_.stop_ids();
  // Fast-forward: tokens the grammar forces go through the model as one chunk.
  for (std::uint32_t f : s.matcher->forced_tokens()) {
    if (stop_ids.contains(static_cast<std::int32_t>(f))) {
      finish(s, FinishReason::Stop);
      return false;
    }
    if (s.pending.size() == limit) break;
    if (!s.matcher->accept(f)) fail("internal error: the grammar rejected its own forced token ", f);
    if (!emit(s, static_cast<std::int32_t>(f), 0.0f, false, {})) {
      finish(s, s.result.finish);
      return false;
    }
    s.pending.push_back(static_cast<std::int32_t>(f));
  }
  return true;
}

void BatchScheduler::rollback(Slot& s, std::size_t n) {
  if (n >= s.cached.size()) return;
  s.session.truncate(static_cast<std::int64_t>(n));
  s.cached.resize(n);
}

// Only the argmax of this slot's logits rows is ever read: greedy with no penalty, no
// logprobs, no grammar mask (a guided row's mask and the rows' logprobs need true values).
// Then the step may run the greedy LM head (model/greedy_head.h).
bool BatchScheduler::argmax_only(const Slot& s) const {
  const GenerationParams& p = s.params;
  return p.sampling.temperature == 0.0f && p.sampling.repetition_penalty == 1.0f && !p.logprobs &&
         p.top_logprobs == 0 && !s.matcher && !p.embedding;
}

void BatchScheduler::advance(Slot& s, std::span<float> logits) {
  try {
    guided::ScopedBudgetBinding charge(s.budget);  // accept() and forced_tokens() are mask work too
    const std::uint32_t* allowed = s.matcher ? s.mask.data() : nullptr;
    const std::int32_t id = s.sampler->sample(logits, allowed, s.generated);
    if (engine_.stop_ids().contains(id) && !s.params.ignore_stop_ids) return finish(s, FinishReason::Stop);
    if (s.matcher && !s.matcher->accept(static_cast<std::uint32_t>(id)))
      fail("internal error: the sampler chose token ", id, " outside the grammar mask");
    if (!emit(s, id, s.sampler->chosen_logprob(), true, logits)) return finish(s, s.result.finish);
    s.pending.assign(1, id);
    if (!s.target_hidden.empty()) keep_hidden(s, s.session.head_input());  // the row these logits came from
    if (!queue_forced(s, static_cast<std::size_t>(model::Session::kMaxChunk))) return;
    if (static_cast<std::int64_t>(s.cached.size() + s.pending.size()) >= context_capacity())
      return finish(s, FinishReason::Length);  // the context is full
  } catch (const std::exception& e) {
    finish(s, FinishReason::Stop, e.what());
  }
}

}  // namespace ringlm::engine
