// Tokenizing text in which some parts are data, not markup: a rendered chat prompt holds the
// template's control tokens (which must become special token ids) and user text (in which a
// control token written out, e.g. "<turn|>", must stay plain text so that a user cannot close
// their turn and speak as the system). The caller names the plain parts as byte ranges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace ringlm {

class Tokenizer;

// A byte range [begin, end) of a text.
struct TextRange {
  std::size_t begin = 0, end = 0;
};

// Like Tokenizer::encode with parse_special on, except that no special-token match may start
// inside `plain` (sorted, non-overlapping): the bytes there are encoded as ordinary text,
// exactly as with parse_special off. Appends to `out`; no BOS is added.
void encode_with_plain_ranges(const Tokenizer& tokenizer, std::string_view text, std::span<const TextRange> plain,
                              std::vector<std::int32_t>& out);

// The first special (control) added token written in `text` at or after `from`, as a byte
// range; begin == npos when there is none.
TextRange find_special_token(const Tokenizer& tokenizer, std::string_view text, std::size_t from = 0);

}  // namespace ringlm
