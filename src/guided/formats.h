// Checks for the JSON Schema `format` values ringlm asserts (date, time, date-time, email, uuid,
// uri, uri-reference, ipv4, ipv6, hostname, json-pointer, relative-json-pointer, duration), and the regular expressions the grammar uses to generate them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ringlm::guided {

// True when ringlm knows how to check `format` (the validator asserts it).
bool is_checked_format(std::string_view format);

// Standard formats (draft 2020-12 and earlier) that assert something ringlm neither generates
// nor checks: `regex` (ECMA-262 syntax is not a regular language), `iri`, `iri-reference`,
// `idn-email`, `idn-hostname`, `uri-template`. Strict compilation refuses them.
bool is_asserting_format(std::string_view format);

// Whether `value` is valid for a checked format; unknown formats are always valid.
bool check_format(std::string_view format, std::string_view value);

// An anchored regex (regex.h subset) generating exactly, or a documented subset of, the strings
// of `format`, or nullopt when the grammar cannot generate it.
std::optional<std::string> format_regex(std::string_view format);

// True when format_regex(format) matches exactly the strings check_format accepts (not a
// subset): date, uri, uuid, ipv4, ipv6 and the regex-defined formats. Not time / date-time
// (leap seconds are checked, not generated), email (a subset) or hostname (a length bound
// outside the regex).
bool format_regex_is_exact(std::string_view format);

// An anchored regex for exactly the strings check_format accepts, where that is a regular
// language the regex subset writes: format_regex when exact, and email and hostname, whose
// generating regexes are subsets. *max_length: a length bound (in code points; -1 for none)
// the check also imposes (hostname: 253). nullopt for the others (time, date-time: leap seconds).
std::optional<std::string> format_check_regex(std::string_view format, int64_t* max_length);

}  // namespace ringlm::guided
