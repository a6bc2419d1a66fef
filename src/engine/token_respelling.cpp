#include "engine/token_respelling.h"

#include <algorithm>
#include <string>

namespace ringlm::engine {

namespace {

// Bytes a plain-text token adds to decoded text; nullptr for control/special tokens, holes
// and ids outside the vocabulary (never exchanged).
const std::string* text_of(const Tokenizer& tok, std::int32_t id) {
  if (id < 0 || id >= tok.vocab_size() || tok.is_special(id)) return nullptr;
  const std::string& bytes = tok.token_bytes(id);
  return bytes.empty() ? nullptr : &bytes;
}

// From cached[i] and prompt[j] (which differ), walks both spellings while their bytes agree
// and returns the last pair of positions where both end on a token boundary at the same
// byte (i, j unchanged when there is none).
std::pair<std::size_t, std::size_t> common_text_boundary(const Tokenizer& tok, std::span<const std::int32_t> cached,
                                                         std::span<const std::int32_t> prompt, std::size_t i,
                                                         std::size_t j) {
  std::pair<std::size_t, std::size_t> best{i, j};
  std::string a, b;         // the bytes of cached[i..ci) and prompt[j..pj)
  std::size_t checked = 0;  // bytes already compared equal
  std::size_t ci = i, pj = j;
  while (true) {
    const bool take_cached = a.size() <= b.size();
    std::span<const std::int32_t> side = take_cached ? cached : prompt;
    std::size_t& at = take_cached ? ci : pj;
    if (at == side.size()) break;
    const std::string* piece = text_of(tok, side[at]);
    if (!piece) break;
    (take_cached ? a : b) += *piece;
    ++at;
    const std::size_t n = std::min(a.size(), b.size());
    if (a.compare(checked, n - checked, b, checked, n - checked) != 0) break;
    checked = n;
    if (a.size() == b.size()) best = {ci, pj};
  }
  return best;
}

}  // namespace

std::size_t respell_like_cache(const Tokenizer& tokenizer, std::span<const std::int32_t> cached,
                               std::span<const std::int32_t> prompt, std::vector<std::int32_t>& out) {
  out.clear();
  std::size_t i = 0, j = 0;
  bool respelled = false;
  while (true) {
    while (i < cached.size() && j < prompt.size() && cached[i] == prompt[j]) ++i, ++j;
    if (i == cached.size() || j == prompt.size()) break;
    auto [ci, pj] = common_text_boundary(tokenizer, cached, prompt, i, j);
    if (ci == i) break;
    respelled = true;
    i = ci;
    j = pj;
  }
  if (!respelled) return 0;
  // cached[0..i) spells what prompt[0..j) spells; the rest of the prompt follows unchanged.
  out.assign(cached.begin(), cached.begin() + static_cast<std::ptrdiff_t>(i));
  out.insert(out.end(), prompt.begin() + static_cast<std::ptrdiff_t>(j), prompt.end());
  return i;
}

}  // namespace ringlm::engine
