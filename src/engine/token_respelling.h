// One text, two spellings in tokens. A model's own reply is often not the way the tokenizer
// would spell its text (sampling picks "wor" + "ld" where encoding gives "world"), so the
// next chat turn, which renders the conversation as text and encodes it, leaves the KV cache
// at the first such place; with sliding-window rings the cache cannot even be truncated back
// there, and the whole conversation is prefilled again. Where the new prompt spells the same
// bytes as the cache with other token boundaries, the cache's spelling is kept instead: the
// text the model sees is identical, and its tokens are the ones it produced itself.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace ringlm::engine {

// Fills `out` with `prompt` respelled in `cached`'s tokens wherever the two run through the
// same text with other boundaries, and returns how many leading tokens of `out` equal
// `cached`. Only plain-text tokens are ever exchanged: a control or special token must match
// by id (a typed "<turn|>" is text, the control token is not). Returns 0 and leaves `out`
// empty when nothing would change (the first divergence is not a respelling).
std::size_t respell_like_cache(const Tokenizer& tokenizer, std::span<const std::int32_t> cached,
                               std::span<const std::int32_t> prompt, std::vector<std::int32_t>& out);

}  // namespace ringlm::engine
