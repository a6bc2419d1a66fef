#include "engine/draft.h"

#include <algorithm>
#include <string>

#include "util/error.h"

namespace ringlm::engine {

DraftParams parse_draft(std::string_view text, int max_tokens) {
  if (max_tokens < 1 || max_tokens > kMaxDraftTokens)
    fail("--draft-max must be in 1..", kMaxDraftTokens, ", got ", max_tokens);
  DraftParams p;
  p.max_tokens = max_tokens;
  if (text == "none") p.source = DraftSource::none;
  else if (text == "ngram") p.source = DraftSource::ngram;
  else if (text == "auto") p.source = DraftSource::ngram, p.adaptive = true;
  else if (text == "assistant" || text.starts_with("assistant:")) {
    p.source = DraftSource::assistant;
    if (text.size() > 10) p.assistant_path = std::string(text.substr(10));
    else if (text != "assistant") fail("--draft assistant: an empty PATH after 'assistant:'");
  }
  else fail("unknown --draft '", std::string(text), "' (expected none, ngram, assistant[:PATH] or auto)");
  return p;
}

namespace {
// The history as one sequence: prompt then generated.
struct History {
  std::span<const std::int32_t> a, b;
  std::size_t size() const { return a.size() + b.size(); }
  std::int32_t operator[](std::size_t i) const { return i < a.size() ? a[i] : b[i - a.size()]; }
};
}  // namespace

void NgramDrafter::propose(std::span<const std::int32_t> prompt, std::span<const std::int32_t> generated, int max,
                           std::vector<std::int32_t>& out) {
  const History h{prompt, generated};
  const std::size_t L = h.size();
  if (max <= 0 || L < 2) return;
  for (std::size_t n = std::min<std::size_t>(kMaxNgram, L - 1); n >= 1; --n) {
    // The latest start s < L - n with h[s .. s+n) == h[L-n .. L); what follows it is h[s+n ..).
    for (std::size_t s = L - n; s-- > 0;) {
      std::size_t m = 0;
      while (m < n && h[s + m] == h[L - n + m]) ++m;
      if (m < n) continue;
      for (std::size_t j = s + n; j < L && static_cast<int>(j - s - n) < max; ++j) out.push_back(h[j]);
      return;
    }
  }
}

OracleDrafter::OracleDrafter(std::shared_ptr<const std::vector<std::int32_t>> tokens, double accept,
                             std::uint64_t seed, std::int32_t vocab)
    : tokens_(std::move(tokens)), accept_(accept), state_(seed * 0x9E3779B97F4A7C15ull + 1), vocab_(vocab) {
  if (!tokens_) fail("the oracle drafter needs a recorded output");
}

void OracleDrafter::propose(std::span<const std::int32_t>, std::span<const std::int32_t> generated, int max,
                            std::vector<std::int32_t>& out) {
  for (std::size_t i = generated.size(); i < tokens_->size() && max-- > 0; ++i) {
    state_ ^= state_ << 13, state_ ^= state_ >> 7, state_ ^= state_ << 17;  // xorshift64
    const double u = static_cast<double>(state_ >> 11) * (1.0 / 9007199254740992.0);
    const std::int32_t t = (*tokens_)[i];
    out.push_back(u < accept_ ? t : (t + 1) % vocab_);  // a wrong token: never the recorded one
  }
}

std::unique_ptr<Drafter> make_drafter(const DraftParams& p, std::int32_t vocab) {
  switch (p.source) {
    case DraftSource::none: return nullptr;
    case DraftSource::ngram: return std::make_unique<NgramDrafter>();
    case DraftSource::oracle: return std::make_unique<OracleDrafter>(p.oracle_tokens, p.oracle_accept, p.oracle_seed, vocab);
    case DraftSource::external:
      if (!p.make_external) fail("draft source external: no drafter factory given");
      return p.make_external();
    case DraftSource::assistant:
      fail("draft source assistant: made with the target model (engine/assistant_drafter.h)");
  }
  return nullptr;
}

}  // namespace ringlm::engine
