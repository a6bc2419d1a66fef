#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "util/error.h"

namespace ringlm::sampling {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Tokens whose probability relative to the best is below e^-30 cannot change any top-p or
// min-p decision at a 262k vocabulary (their total mass is < 3e-8), so they are dropped
// before sorting; this keeps sampling O(V) instead of O(V log V).
constexpr float kLogitCutoff = 30.0f;
}  // namespace

namespace {
[[noreturn]] void bad_param(const char* field, const char* rule, double got) {
  throw Error(detail::concat(field, " must be ", rule, ", got ", got, " (as a 32-bit float)"),
              ErrorKind::invalid_argument, field);
}
}  // namespace

void check_sampler_params(const SamplerParams& p) {
  // Written as !(in range) so that NaN, which compares false, is refused too.
  if (!(p.temperature == 0.0f || (p.temperature >= kMinTemperature && std::isfinite(p.temperature))))
    bad_param("temperature", "0 (greedy) or a finite value of at least 1e-4", p.temperature);
  if (p.top_k < 0) bad_param("top_k", ">= 0 (0 = off)", p.top_k);
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) bad_param("top_p", "greater than 0 and at most 1", p.top_p);
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) bad_param("min_p", "between 0 and 1", p.min_p);
  if (!(p.repetition_penalty >= kMinRepetitionPenalty && p.repetition_penalty <= kMaxRepetitionPenalty))
    bad_param("repetition_penalty", "between 0.01 and 100 (1 = off)", p.repetition_penalty);
  if (p.repetition_window < 0) bad_param("repetition_window", ">= 0 (0 = all)", p.repetition_window);
}

Sampler::Sampler(const SamplerParams& params, std::int32_t vocab_size)
    : params_(params), vocab_(vocab_size), rng_(params.seed) {
  if (vocab_size <= 0) fail("sampler: vocabulary size must be positive");
  check_sampler_params(params);
  candidates_.resize(static_cast<std::size_t>(vocab_size));
  probs_.resize(static_cast<std::size_t>(vocab_size));
  seen_.assign(static_cast<std::size_t>(vocab_size), 0);
}

void Sampler::reseed(std::uint64_t seed) {
  params_.seed = seed;
  rng_.seed(seed);
}

double Sampler::uniform01() { return static_cast<double>(rng_() >> 11) * (1.0 / 9007199254740992.0); }

std::int32_t Sampler::sample(std::span<float> logits, const std::uint32_t* allowed,
                             std::span<const std::int32_t> recent) {
  const std::int32_t best = prepare(logits, allowed, recent);
  std::int32_t chosen = best;
  last_total_ = 0.0;
  if (params_.temperature > 0.0f) {
    last_total_ = keep_candidates(logits.data(), logits[best]);
    chosen = draw(logits.data(), last_total_);
  }
  last_chosen_ = chosen;
  chosen_logprob_ = logits[chosen] - log_norm_;
  return chosen;
}

void Sampler::last_distribution(std::span<float> out) const {
  if (static_cast<std::int32_t>(out.size()) != vocab_ || last_chosen_ < 0)
    fail_internal("sampler: last_distribution needs a sample() first and ", vocab_, " entries, got ", out.size());
  std::fill(out.begin(), out.end(), 0.0f);
  if (!(last_total_ > 0.0)) {
    out[static_cast<std::size_t>(last_chosen_)] = 1.0f;
    return;
  }
  // draw() picks candidate j with probability probs_[j] / total: exactly these weights.
  for (std::size_t j = 0; j < n_kept_; ++j)
    out[static_cast<std::size_t>(candidates_[j])] = static_cast<float>(probs_[j] / last_total_);
}

std::int32_t Sampler::sample_draft(std::span<float> logits, const std::uint32_t* allowed,
                                   std::span<const std::int32_t> recent, std::int32_t draft,
                                   std::span<const float> q, bool* accepted) {
  if (q.empty() || params_.temperature <= 0.0f) {
    // q one-hot at the draft (or greedy, where p is one-hot): accept with probability p(d),
    // else a token of p without d. One draw of p and a comparison is exactly that, and it
    // keeps the output identical to sample()'s with the same seed.
    const std::int32_t id = sample(logits, allowed, recent);
    *accepted = id == draft;
    return id;
  }
  if (static_cast<std::int32_t>(q.size()) != vocab_ || draft < 0 || draft >= vocab_)
    fail_internal("sampler: a draft distribution of ", q.size(), " entries (vocabulary ", vocab_, ") or draft id ", draft);
  float* x = logits.data();
  last_chosen_ = -1;  // probs_ becomes the residual below: last_distribution() no longer applies
  const std::int32_t best = prepare(logits, allowed, recent);
  const double total = keep_candidates(x, x[best]);
  // q restricted to what may be sampled here: a drafted token the grammar refused ended the
  // draft before it, so the verified token was drawn from q given the mask.
  double q_mass = 1.0;
  if (allowed) {
    q_mass = 0.0;
    for (std::int32_t i = 0; i < vocab_; ++i)
      if (mask_allows(allowed, i)) q_mass += q[static_cast<std::size_t>(i)];
  }
  const double qd = q[static_cast<std::size_t>(draft)] / q_mass;
  if (!(qd > 0.0)) fail_internal("sampler: drafted token ", draft, " has probability 0 under its own distribution");
  double pd = 0.0;
  for (std::size_t j = 0; j < n_kept_; ++j)
    if (candidates_[j] == draft) pd = probs_[j] / total;
  std::int32_t chosen;
  // Accept with probability min(1, p(d) / q(d)).
  if (uniform01() * qd < pd) {
    chosen = draft;
    *accepted = true;
  } else {
    // Rejected: draw from norm(max(0, p - q)). Outside the kept candidates p is 0, and so
    // is the residual.
    *accepted = false;
    double residual = 0.0;
    for (std::size_t j = 0; j < n_kept_; ++j)
      residual += std::max(0.0, probs_[j] / total - q[static_cast<std::size_t>(candidates_[j])] / q_mass);
    if (residual > 0.0) {
      for (std::size_t j = 0; j < n_kept_; ++j)
        probs_[j] = static_cast<float>(std::max(0.0, probs_[j] / total - q[static_cast<std::size_t>(candidates_[j])] / q_mass));
      chosen = draw(x, residual);
    } else {
      chosen = draw(x, total);  // p == q up to rounding: a rejection had probability 0
    }
  }
  chosen_logprob_ = x[chosen] - log_norm_;
  return chosen;
}

std::int32_t Sampler::prepare(std::span<float> logits, const std::uint32_t* allowed,
                              std::span<const std::int32_t> recent) {
  if (static_cast<std::int32_t>(logits.size()) != vocab_)
    fail_internal("sampler: logits row has ", logits.size(), " entries, vocabulary has ", vocab_);
  float* x = logits.data();

  // Repetition penalty on each distinct recent token (HF semantics).
  if (params_.repetition_penalty != 1.0f && !recent.empty()) {
    std::size_t start = 0;
    if (params_.repetition_window > 0 && recent.size() > static_cast<std::size_t>(params_.repetition_window))
      start = recent.size() - static_cast<std::size_t>(params_.repetition_window);
    for (std::size_t i = start; i < recent.size(); ++i) {
      std::int32_t id = recent[i];
      if (id < 0 || id >= vocab_ || seen_[id]) continue;
      seen_[id] = 1;
      x[id] = x[id] > 0 ? x[id] / params_.repetition_penalty : x[id] * params_.repetition_penalty;
    }
    for (std::size_t i = start; i < recent.size(); ++i)
      if (recent[i] >= 0 && recent[i] < vocab_) seen_[recent[i]] = 0;
  }

  // Mask in place and find the best allowed token.
  std::int32_t best = -1;
  float best_logit = kNegInf;
  if (allowed) {
    for (std::int32_t w = 0; w < (vocab_ + 31) / 32; ++w) {
      std::uint32_t bits = allowed[w];
      std::int32_t base = w * 32;
      std::int32_t end = std::min(base + 32, vocab_);
      for (std::int32_t i = base; i < end; ++i) {
        if (!((bits >> (i - base)) & 1u)) x[i] = kNegInf;
      }
    }
  }
  // The first index of the largest logit, in two passes: the maximum (and whether any logit
  // is NaN) as a reduction the compiler vectorises, then the first index holding it. The
  // one-pass argmax carried a dependency through every element: 0.4 ms per 262,144-entry row,
  // which a batched step pays once per sequence on one thread. Same index as that loop
  // (strict > keeps the first of equal values; -0 and +0 compare equal in both).
  // (GCC vector types, 4 x 4 lanes: the compiler neither reorders a float max reduction nor
  // vectorises the select under -ftrapping-math. SSE2 or NEON code; max is exact, so the
  // lanes' order does not matter: a NaN never wins "v > m", and NaNs are reported apart.)
  using F4 = float __attribute__((vector_size(16)));
  using I4 = std::int32_t __attribute__((vector_size(16)));
  F4 lane_max[4];
  I4 lane_nan[4];
  for (int j = 0; j < 4; ++j) {
    lane_max[j] = F4{kNegInf, kNegInf, kNegInf, kNegInf};
    lane_nan[j] = I4{0, 0, 0, 0};
  }
  std::int32_t i0 = 0;
  for (; i0 + 16 <= vocab_; i0 += 16)
    for (int j = 0; j < 4; ++j) {
      F4 v;
      std::memcpy(&v, x + i0 + 4 * j, sizeof v);
      lane_nan[j] |= v != v;
      const I4 more = v > lane_max[j];  // -1 where v wins (bitwise select: no vector ?: needed)
      lane_max[j] = reinterpret_cast<F4>((reinterpret_cast<I4>(v) & more) | (reinterpret_cast<I4>(lane_max[j]) & ~more));
    }
  bool any_nan = false;
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 4; ++l) {
      any_nan |= lane_nan[j][l] != 0;
      best_logit = lane_max[j][l] > best_logit ? lane_max[j][l] : best_logit;
    }
  for (std::int32_t i = i0; i < vocab_; ++i) {
    any_nan |= x[i] != x[i];
    best_logit = x[i] > best_logit ? x[i] : best_logit;
  }
  if (best_logit > kNegInf)
    for (std::int32_t i = 0; i < vocab_; ++i)
      if (x[i] == best_logit) {
        best = i;
        break;
      }
  // NaN compares false with everything, so it would simply never be chosen and the tokens
  // that are left (maybe a single one, forever) would look like a valid distribution.
  if (any_nan) {
    std::int32_t first = 0;
    while (x[first] == x[first]) ++first;
    fail_internal("sampler: the logit of token ", first, " is NaN (the model computed NaN; are the checkpoint's weights finite?)");
  }
  if (best < 0 || !(best_logit > kNegInf)) fail_internal("sampler: no token is allowed (empty mask or all logits -inf/NaN)");

  // Normaliser for logprobs (before temperature).
  if (logprobs_) {
    double sum = 0.0;
    for (std::int32_t i = 0; i < vocab_; ++i)
      if (x[i] > best_logit - 2 * kLogitCutoff) sum += std::exp(static_cast<double>(x[i] - best_logit));
    log_norm_ = best_logit + static_cast<float>(std::log(sum));
  } else {
    log_norm_ = best_logit;
  }

  return best;
}

double Sampler::keep_candidates(const float* x, float best_logit) {
  {
    const float inv_t = 1.0f / params_.temperature;
    auto prob = [&](std::int32_t id) {
      return static_cast<float>(std::exp(static_cast<double>((x[id] - best_logit) * inv_t)));
    };
    auto by_logit = [x](std::int32_t a, std::int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); };
    // Candidates: allowed tokens within the cutoff of the best, after temperature.
    std::size_t n = 0;
    for (std::int32_t i = 0; i < vocab_; ++i) {
      if ((x[i] - best_logit) * inv_t > -kLogitCutoff) candidates_[n++] = i;
    }
    if (params_.top_k > 0 && n > static_cast<std::size_t>(params_.top_k)) {
      std::nth_element(candidates_.begin(), candidates_.begin() + params_.top_k, candidates_.begin() + n, by_logit);
      n = static_cast<std::size_t>(params_.top_k);
    }
    // min-p: keep tokens with p >= min_p * p_best (p_best is exp(0) = 1). Order is irrelevant.
    if (params_.min_p > 0.0f) {
      std::size_t keep = 0;
      for (std::size_t j = 0; j < n; ++j)
        if (prob(candidates_[j]) >= params_.min_p) candidates_[keep++] = candidates_[j];
      n = keep;
    }
    double total = 0.0;
    for (std::size_t j = 0; j < n; ++j) total += probs_[j] = prob(candidates_[j]);
    // top-p: the smallest most-likely prefix whose mass reaches top_p. Only that prefix needs
    // sorting, so sort a growing head of the candidates until it holds enough mass.
    if (params_.top_p < 1.0f) {
      const double target = params_.top_p * total;
      std::size_t m = std::min<std::size_t>(n, 256);
      while (true) {
        std::partial_sort(candidates_.begin(), candidates_.begin() + m, candidates_.begin() + n, by_logit);
        double acc = 0.0;
        std::size_t keep = 0;
        while (keep < m && acc < target) acc += probs_[keep] = prob(candidates_[keep]), ++keep;
        if (acc >= target || m == n) {
          n = keep;
          total = acc;
          break;
        }
        m = std::min(n, m * 4);
      }
    }
    n_kept_ = n;
    return total;
  }
}

std::int32_t Sampler::draw(const float*, double total) {
  // Inverse CDF over the (unordered) kept candidates' weights probs_[0, n_kept_).
  double r = uniform01() * total;
  std::int32_t chosen = candidates_[n_kept_ - 1];
  for (std::size_t j = 0; j < n_kept_; ++j) {
    r -= probs_[j];
    if (r < 0) {
      chosen = candidates_[j];
      break;
    }
  }
  return chosen;
}

void Sampler::top_logprobs(std::span<const float> logits, int n, std::vector<TokenLogprob>& out) const {
  out.clear();
  n = std::clamp(n, 0, 20);
  // Keep a small sorted list of the n best; O(V * n) with n <= 20 and no allocation beyond `out`.
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(logits.size()); ++i) {
    float v = logits[i];
    if (!(v > kNegInf)) continue;
    if (static_cast<int>(out.size()) == n && (n == 0 || v <= out.back().logprob)) continue;
    TokenLogprob t{i, v};
    auto pos = std::upper_bound(out.begin(), out.end(), t,
                                [](const TokenLogprob& a, const TokenLogprob& b) { return a.logprob > b.logprob; });
    out.insert(pos, t);
    if (static_cast<int>(out.size()) > n) out.pop_back();
  }
  for (auto& t : out) t.logprob -= log_norm_;
}

}  // namespace ringlm::sampling
