// UTF-8 text helpers with Python str semantics: strings are sequences of code points, and
// "whitespace" is what Python's str.isspace() accepts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringlm::jinja::text {

// Decodes UTF-8 into code points by util/utf8.h's rules: each byte that does not start a
// well-formed character becomes U+FFFD (never reads past the end).
std::vector<char32_t> decode(std::string_view s);
// The UTF-8 of cps[begin, end) (util/utf8.h's encoder).
std::string encode(const std::vector<char32_t>& cps, std::size_t begin, std::size_t end);
// Number of code points.
std::size_t length(std::string_view s);

bool is_space(char32_t c);
// Python str.strip()/lstrip()/rstrip(); with `chars` set, strips those code points instead.
std::string strip(std::string_view s, bool left, bool right, const std::string* chars = nullptr);

// Python str.upper()/lower() for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic.
std::string upper(std::string_view s);
std::string lower(std::string_view s);
// Jinja's `title` filter: each run between separators (-, whitespace, ( { [ <) gets its first
// character upper-cased and the rest lower-cased (unlike str.title(), `_` does not split).
std::string title_words(std::string_view s);
// Python str.capitalize() and str.title().
std::string capitalize(std::string_view s);
std::string title(std::string_view s);

// Python str.replace(old, new, count) (count < 0: all).
std::string replace(std::string_view s, std::string_view from, std::string_view to, long long count = -1);

}  // namespace ringlm::jinja::text
