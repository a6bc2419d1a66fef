// Token sampling over one row of logits: greedy, temperature, top-k, top-p, min-p and
// repetition penalty, with a seeded generator so a run is reproducible.
//
// The logits row is modified in place (penalties, mask, temperature) — no copy of the
// 262k-entry row — and all scratch space is allocated once, in the constructor.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace ringlm::sampling {

struct SamplerParams {
  float temperature = 0.0f;          // 0 = greedy (argmax)
  int top_k = 0;                     // 0 = off
  float top_p = 1.0f;                // 1 = off
  float min_p = 0.0f;                // 0 = off; keeps tokens with p >= min_p * p_max
  float repetition_penalty = 1.0f;   // 1 = off; HF semantics: positive logits / p, negative * p
  int repetition_window = 256;       // how many recent tokens the penalty looks at (0 = all given)
  std::uint64_t seed = 0;
};

// The smallest positive temperature: below it 1/T overflows float (a denormal T gives inf, and
// inf * 0 gives NaN for the best token). Everything under it samples like greedy anyway.
inline constexpr float kMinTemperature = 1e-4f;
// Repetition penalties outside this range turn ordinary logits into inf (x / tiny) and then
// NaN (inf - inf); HF's useful range is about 1..2.
inline constexpr float kMinRepetitionPenalty = 0.01f;
inline constexpr float kMaxRepetitionPenalty = 100.0f;

// The one check of sampling parameters, in the units the sampler uses (float), shared by
// every front end (serve, extract, run, chat, the Python binding) and by the Sampler's
// constructor. A value that was valid as a double may round to 0, a denormal or inf as a
// float: the check sees what the sampler would. Throws ringlm::Error (invalid_argument) whose
// param() is the field's API name ("top_p") and whose message gives the rule and the value:
//   temperature         0 (greedy) or in [kMinTemperature, inf), finite
//   top_k               >= 0 (0 = off)
//   top_p               in (0, 1]
//   min_p               in [0, 1]
//   repetition_penalty  in [kMinRepetitionPenalty, kMaxRepetitionPenalty]
//   repetition_window   >= 0
void check_sampler_params(const SamplerParams& params);

struct TokenLogprob {
  std::int32_t id;
  float logprob;
};

class Sampler {
 public:
  Sampler(const SamplerParams& params, std::int32_t vocab_size);

  // Picks a token from `logits` (length vocab_size, modified in place). `allowed` is an
  // optional bitset (bit i of word i/32 set = token i may be sampled); `recent` the tokens
  // generated so far (for the repetition penalty). Throws ringlm::Error if no token is allowed.
  std::int32_t sample(std::span<float> logits, const std::uint32_t* allowed,
                      std::span<const std::int32_t> recent);

  // Speculative sampling: verifies drafted token `draft`, which the drafter drew from `q`
  // (vocab_size probabilities; empty: the drafter proposes d with certainty, q one-hot),
  // and returns the token to emit. The standard rejection rule keeps the output distributed
  // exactly as sample()'s: with p this sampler's distribution (penalties, mask, temperature,
  // top-k/p, min-p), d is accepted (*accepted = true, d returned) with probability
  // min(1, p(d)/q(d)); otherwise a token is drawn from norm(max(0, p - q)). With `allowed`,
  // q is taken given the mask (a refused token never reaches verification). For q one-hot,
  // and under greedy, this is one sample() and a comparison.
  std::int32_t sample_draft(std::span<float> logits, const std::uint32_t* allowed, std::span<const std::int32_t> recent,
                            std::int32_t draft, std::span<const float> q, bool* accepted);

  // Log-probabilities under the distribution of the last sample() call after penalties and
  // the mask, before temperature (what OpenAI's logprobs report): the chosen token's, and
  // the `n` most likely tokens (n <= 20), most likely first.
  // Computing them costs a pass of exp() over the vocabulary, so it is off by default.
  void enable_logprobs(bool on) { logprobs_ = on; }
  float chosen_logprob() const { return chosen_logprob_; }
  void top_logprobs(std::span<const float> logits, int n, std::vector<TokenLogprob>& out) const;

  // The distribution the last sample() call drew from, written over `out` (vocab_size
  // entries): the kept candidates' weights after penalties, mask, temperature, top-k, min-p
  // and top-p, normalised, 0 elsewhere; one-hot at the chosen token under greedy. A drafter
  // that samples its drafts with its own Sampler states q this way (engine/draft.h). Valid
  // until the next sample() / sample_draft() call.
  void last_distribution(std::span<float> out) const;

  const SamplerParams& params() const { return params_; }
  void reseed(std::uint64_t seed);

 private:
  double uniform01();
  // sample()'s steps: penalties, mask, argmax and the logprob normaliser (returns the best
  // token); the kept candidates' weights after temperature, top-k, min-p and top-p
  // (candidates_/probs_[0, n_kept_), returns their sum); an inverse-CDF draw over them.
  std::int32_t prepare(std::span<float> logits, const std::uint32_t* allowed, std::span<const std::int32_t> recent);
  double keep_candidates(const float* x, float best_logit);
  std::int32_t draw(const float* x, double total);

  SamplerParams params_;
  std::int32_t vocab_;
  std::mt19937_64 rng_;
  std::vector<std::int32_t> candidates_;  // scratch, size vocab
  std::vector<float> probs_;              // scratch, size vocab
  std::size_t n_kept_ = 0;                // candidates kept by keep_candidates()
  double last_total_ = 0.0;               // their weights' sum at the last sample() (0: greedy)
  std::int32_t last_chosen_ = -1;         // the last sample()'s token
  std::vector<std::uint8_t> seen_;        // scratch for the penalty, size vocab
  bool logprobs_ = false;
  float chosen_logprob_ = 0.0f;
  float log_norm_ = 0.0f;  // log-sum-exp of the masked, penalised logits (for logprobs)
};

// True if bit `id` is set in the bitset.
inline bool mask_allows(const std::uint32_t* mask, std::int32_t id) {
  return (mask[static_cast<std::uint32_t>(id) >> 5] >> (id & 31)) & 1u;
}

}  // namespace ringlm::sampling
