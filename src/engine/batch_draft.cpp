// Speculative decoding inside the batch scheduler (engine/draft.h explains why the output
// does not change). A drafting sequence's step item is its pending tokens followed by the
// draft; every row from the last pending one on gets logits, and each row's attention runs
// as the step plain decoding would have run for that token (model::BatchItem::row_chunk), so
// on the q4_0 path the rows are bit-identical to those steps.
#include <algorithm>
#include <chrono>

#include "engine/batch_scheduler.h"
#include "engine/batch_slot.h"
#include "util/error.h"

namespace ringlm::engine {

void BatchScheduler::make_draft(Slot& s, int room, int base_rows, int sequences) {
  s.n_draft = 0;
  const std::size_t real = s.pending.size();
  s.draft.clear();
  if (s.drafter) {
    const std::int64_t context_left =
        static_cast<std::int64_t>(context_capacity()) - 1 - static_cast<std::int64_t>(s.cached.size() + real);
    const int cap = static_cast<int>(std::max<std::int64_t>(0, std::min<std::int64_t>(
        {s.draft_max, room, model::Session::kMaxChunk - static_cast<std::int64_t>(real), context_left})));
    // auto: the k that maximises the expected tokens per second (0: not this step).
    const int k = s.governor.choose(cap, step_costs_, base_rows, sequences);
    if (k > 0) {
      if (s.drafter->wants_target_state()) {
        // The target's state at the last known token: only a lone sampled token has the
        // hidden row that produced it (grammar-forced tokens after it have none yet).
        const bool known = s.hidden_known && real == 1 && !s.pending_chunk;
        s.drafter->set_target_state({&s.session, s.pending.back(), static_cast<std::int64_t>(s.cached.size()),
                                     known ? std::span<const float>(s.target_hidden) : std::span<const float>()});
      }
      const auto t0 = std::chrono::steady_clock::now();
      s.drafter->propose(s.prompt, s.generated, k, s.draft);
      if (!s.draft.empty()) {
        ++stats_.draft_rounds;
        stats_.draft_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
    }
    s.hidden_known = false;
  }
  // Per row: 1 where plain decoding runs the token inside a longer chunk (a sampled token
  // with forced ones after it, the forced ones, a chunk an accepted draft began), 0 where it
  // runs it as a one-token step.
  s.row_chunk.assign(real, real > 1 || s.pending_chunk ? 1 : 0);
  if (s.matcher && !s.draft.empty()) {
    // The grammar filters the draft: a refused token ends it before, a token with forced
    // tokens after it ends it after (those run as the next step's chunk). Undone afterwards.
    // On a device such a token ends it before as well: plain decoding runs it in one chunk
    // with the forced tokens, and a device row's bits depend on its chunk's size (the tiled
    // matmul from 8 rows, docs/backends.md), which a verify row cannot reproduce.
    const bool device = engine_.model()->device_weights() != nullptr;
    std::size_t taken = 0, accepted = 0;
    while (taken < s.draft.size()) {
      if (!s.matcher->accept(static_cast<std::uint32_t>(s.draft[taken]))) break;
      ++accepted;
      if (!s.matcher->forced_tokens().empty()) {
        if (device) break;
        ++taken;
        s.row_chunk.resize(real + taken, 0);
        s.row_chunk.back() = 1;
        break;
      }
      ++taken;
    }
    s.matcher->rollback(accepted);
    s.draft.resize(taken);
  }
  s.row_chunk.resize(real + s.draft.size(), 0);
  s.n_draft = static_cast<int>(s.draft.size());
  s.pending.insert(s.pending.end(), s.draft.begin(), s.draft.end());
  s.use_row_chunk = s.n_draft > 0 || s.pending_chunk;
  s.pending_chunk = false;
}

void BatchScheduler::keep_hidden(Slot& s, std::span<const float> row) {
  if (s.target_hidden.empty() || !s.drafter || !s.drafter->wants_target_state()) return;
  std::copy(row.begin(), row.end(), s.target_hidden.begin());
  s.hidden_known = true;
}

void BatchScheduler::verify(Slot& s, std::size_t item) {
  const int k = s.n_draft;
  s.n_draft = 0;
  s.step_accepted = 0;
  s.result.drafted_tokens += k;
  stats_.drafted += static_cast<std::uint64_t>(k);
  verify_rows(s, item, s.cached.size() - static_cast<std::size_t>(k), k);
  s.governor.record(k, s.step_accepted);
  stats_.accepted += static_cast<std::uint64_t>(s.step_accepted);
}

void BatchScheduler::verify_rows(Slot& s, std::size_t item, std::size_t base, int k) {
  const std::size_t real = s.row_chunk.size() - static_cast<std::size_t>(k);
  const std::int64_t capacity = context_capacity();
  try {
    guided::ScopedBudgetBinding charge(s.budget);
    for (int j = 0;; ++j) {
      // Row j: the logits after the last pending token (j = 0) or after draft token j - 1;
      // the cache holds base + j tokens that plain decoding would have run by now.
      std::span<float> logits = batch_->logits(item, j);
      const std::uint32_t* allowed = nullptr;
      if (s.matcher) {
        s.matcher->fill_mask(s.mask.data());
        ++s.result.guided_steps;
        allowed = s.mask.data();
      }
      // Rows with a draft apply the rejection rule (sampling::Sampler::sample_draft: for a
      // drafter proposing with certainty, a plain sample compared with the draft).
      bool accepted = false;
      const std::int32_t id =
          j < k ? s.sampler->sample_draft(logits, allowed, s.generated, s.draft[static_cast<std::size_t>(j)],
                                          s.drafter->distribution(static_cast<std::size_t>(j)), &accepted)
                : s.sampler->sample(logits, allowed, s.generated);
      const std::size_t held = base + static_cast<std::size_t>(j);
      if (engine_.stop_ids().contains(id) && !s.params.ignore_stop_ids) {
        rollback(s, held);
        return finish(s, FinishReason::Stop);
      }
      if (s.matcher && !s.matcher->accept(static_cast<std::uint32_t>(id)))
        fail("internal error: the sampler chose token ", id, " outside the grammar mask");
      if (!emit(s, id, s.sampler->chosen_logprob(), true, logits)) {
        rollback(s, held);
        return finish(s, s.result.finish);
      }
      if (!accepted) {
        // A new token (a rejected draft's replacement, or the row after the last draft): the
        // drafted tokens from row j on leave the cache, and it runs next step.
        rollback(s, held);
        s.pending.assign(1, id);
        keep_hidden(s, batch_->hidden(item, j));  // row j's logits gave it
        if (!queue_forced(s, static_cast<std::size_t>(model::Session::kMaxChunk))) return;
        break;
      }
      ++s.step_accepted;
      ++s.result.accepted_drafts;
      if (s.row_chunk[real + static_cast<std::size_t>(j)]) {
        // Accepted, and the grammar forces tokens after it (the draft's last token): they
        // run next step as the rest of the chunk this token began.
        s.pending.clear();
        if (!queue_forced(s, static_cast<std::size_t>(model::Session::kMaxChunk) - 1)) return;
        s.pending_chunk = true;
        break;
      }
      if (static_cast<std::int64_t>(held + 1) >= capacity) {
        rollback(s, held);
        return finish(s, FinishReason::Length);
      }
    }
    if (s.pending.empty()) fail("internal error: nothing to run after an accepted draft");
    if (static_cast<std::int64_t>(s.cached.size() + s.pending.size()) >= capacity)
      return finish(s, FinishReason::Length);  // the context is full
  } catch (const std::exception& e) {
    finish(s, FinishReason::Stop, e.what());
  }
}

}  // namespace ringlm::engine
