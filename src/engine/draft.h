// Draft sources for speculative decoding (issue #33).
//
// A drafter proposes up to `max` tokens that may follow the history (prompt + generated so
// far, the last generated token being the one the next step runs). The scheduler
// (engine/batch_scheduler.h) runs them as extra rows after that token in the same batched
// pass, verifies the drafted tokens in order with the standard speculative-sampling rule
// (sampling::Sampler::sample_draft: accept d with probability min(1, p(d)/q(d)), else draw
// from norm(max(0, p - q)), p the sampler's distribution of that row, q the drafter's),
// keeps them up to the first rejection and rolls the KV cache back over the rest. The
// drafters here propose with certainty (q one-hot): then the rule is "sample the row,
// accept d if it is the sample", the sampler draws once per emitted token either way, and
// the output (tokens, logprobs, text) is identical to decoding without drafts, sampled or
// greedy, on the q4_0 path. A drafter that samples from a distribution (Drafter::
// distribution) keeps the output's distribution (not its bits) under sampling, and its
// greedy output identical.
//
// A guided request filters the draft through its grammar as it is made: a token the
// grammar refuses ends the draft before it, and a token after which the grammar forces
// tokens ends the draft after it (those run as the next step's chunk, as without drafts).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/draft_governor.h"

namespace ringlm::model {
class Session;
}

namespace ringlm::engine {

// assistant: the Gemma 4 assistant (MTP drafter), engine/assistant_drafter.h.
enum class DraftSource { none, ngram, oracle, external, assistant };

class Drafter;

struct DraftParams {
  DraftSource source = DraftSource::none;
  int max_tokens = 4;  // k: drafted tokens per step (1..16)
  // Draft only while the measured acceptance and step costs make it faster (auto:
  // engine/draft_governor.h).
  bool adaptive = false;
  // oracle (benchmarks): the recorded output to replay; each drafted token is replaced by a
  // wrong one with probability 1 - oracle_accept (seeded), so acceptance is set at will.
  std::shared_ptr<const std::vector<std::int32_t>> oracle_tokens;
  double oracle_accept = 1.0;
  std::uint64_t oracle_seed = 1;
  // external: makes each sequence's drafter (a drafter defined outside the engine: tests,
  // embedders). Not reachable from the command line.
  std::function<std::unique_ptr<Drafter>()> make_external;
  // assistant: the checkpoint directory or .gguf file; empty: found next to the target model
  // (engine/assistant_drafter.h, find_assistant_dir).
  std::string assistant_path;
};

// The one default of every front end (run, chat, serve, extract, the Python binding):
// drafting stays off unless asked for, since `auto` is the default only if it never loses
// on this CPU (issue #33; docs/speculative.md has the measurements).
inline constexpr std::string_view kDefaultDraft = "none";
inline constexpr int kDefaultDraftMax = 4;
inline constexpr int kMaxDraftTokens = 16;

// Parses --draft: none | ngram | auto (ngram with the adaptive policy) | assistant[:PATH]
// (the path is checked when the drafter is made). Throws ringlm::Error.
DraftParams parse_draft(std::string_view text, int max_tokens = kDefaultDraftMax);

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Appends at most `max` proposed tokens to `out` (which it does not clear).
  virtual void propose(std::span<const std::int32_t> prompt, std::span<const std::int32_t> generated, int max,
                       std::vector<std::int32_t>& out) = 0;
  // The distribution (vocabulary-sized probabilities) the j-th token of the last propose()
  // was drawn from, for sampled verification's rejection rule (sampling::Sampler::
  // sample_draft). Empty, the default: the drafter proposes its tokens with certainty
  // (q one-hot), which needs no distribution. Greedy verification never asks.
  virtual std::span<const float> distribution(std::size_t /*j*/) const { return {}; }

  // What a drafter that reads the target model's own state sees before propose(): the
  // sequence's session (its KV cache holds positions 0 .. position - 1), the last known token
  // (the one the coming step runs, at `position`) and the target's final-normed hidden state
  // of position - 1, the row whose logits gave that token. hidden is empty where the target
  // has not computed it (the step runs grammar-forced tokens after it): then the drafter
  // proposes nothing. Valid during the propose() call that follows only.
  struct TargetState {
    const model::Session* session = nullptr;
    std::int32_t token = 0;
    std::int64_t position = 0;
    std::span<const float> hidden;
  };
  // True: the scheduler keeps the hidden rows and calls set_target_state() before propose().
  virtual bool wants_target_state() const { return false; }
  virtual void set_target_state(const TargetState& /*state*/) {}
};

// Prompt lookup: the longest suffix of the history (up to kMaxNgram tokens, at least 1)
// that occurred before, at its latest earlier occurrence; proposes what followed it there.
// Scans the history once per n, no allocation.
class NgramDrafter final : public Drafter {
 public:
  static constexpr int kMaxNgram = 6;
  void propose(std::span<const std::int32_t> prompt, std::span<const std::int32_t> generated, int max,
               std::vector<std::int32_t>& out) override;
};

class OracleDrafter final : public Drafter {
 public:
  OracleDrafter(std::shared_ptr<const std::vector<std::int32_t>> tokens, double accept, std::uint64_t seed,
                std::int32_t vocab);
  void propose(std::span<const std::int32_t> prompt, std::span<const std::int32_t> generated, int max,
               std::vector<std::int32_t>& out) override;

 private:
  std::shared_ptr<const std::vector<std::int32_t>> tokens_;
  double accept_;
  std::uint64_t state_;
  std::int32_t vocab_;
};

std::unique_ptr<Drafter> make_drafter(const DraftParams& params, std::int32_t vocab);

// DraftGovernor (the adaptive policy, `auto`): engine/draft_governor.h.

}  // namespace ringlm::engine
