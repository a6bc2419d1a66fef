#include "guided/formats.h"

#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "guided/regex.h"
#include "util/error.h"

namespace ringlm::guided {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

int to_int(std::string_view s) { return std::atoi(std::string(s).c_str()); }

bool is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

bool check_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  if (!all_digits(s.substr(0, 4)) || !all_digits(s.substr(5, 2)) || !all_digits(s.substr(8, 2))) return false;
  int y = to_int(s.substr(0, 4)), m = to_int(s.substr(5, 2)), d = to_int(s.substr(8, 2));
  static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || d < 1) return false;
  int max_day = kDays[m - 1] + (m == 2 && is_leap(y) ? 1 : 0);
  return d <= max_day;
}

// RFC 3339 full-time: HH:MM:SS[.frac](Z|+HH:MM|-HH:MM), leap second only at 23:59 UTC.
bool check_time(std::string_view s) {
  if (s.size() < 9 || s[2] != ':' || s[5] != ':') return false;
  if (!all_digits(s.substr(0, 2)) || !all_digits(s.substr(3, 2)) || !all_digits(s.substr(6, 2))) return false;
  int h = to_int(s.substr(0, 2)), mi = to_int(s.substr(3, 2)), se = to_int(s.substr(6, 2));
  size_t i = 8;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j == i + 1) return false;
    i = j;
  }
  if (i >= s.size()) return false;
  int off_min = 0;
  if (s[i] == 'Z' || s[i] == 'z') {
    if (i + 1 != s.size()) return false;
  } else if (s[i] == '+' || s[i] == '-') {
    std::string_view off = s.substr(i + 1);
    if (off.size() != 5 || off[2] != ':' || !all_digits(off.substr(0, 2)) || !all_digits(off.substr(3, 2))) {
      return false;
    }
    int oh = to_int(off.substr(0, 2)), om = to_int(off.substr(3, 2));
    if (oh > 23 || om > 59) return false;
    off_min = (oh * 60 + om) * (s[i] == '+' ? 1 : -1);
  } else {
    return false;
  }
  if (h > 23 || mi > 59 || se > 60) return false;
  if (se == 60) {
    int utc = ((h * 60 + mi - off_min) % 1440 + 1440) % 1440;
    if (utc != 23 * 60 + 59) return false;
  }
  return true;
}

bool check_date_time(std::string_view s) {
  if (s.size() < 11 || (s[10] != 'T' && s[10] != 't')) return false;
  return check_date(s.substr(0, 10)) && check_time(s.substr(11));
}

bool check_email(std::string_view s) {
  auto at = s.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == s.size()) return false;
  std::string_view local = s.substr(0, at), domain = s.substr(at + 1);
  if (local.front() == '.' || local.back() == '.' || local.find("..") != std::string_view::npos) return false;
  for (unsigned char c : s)
    if (c <= 0x20) return false;
  return !domain.empty();
}

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

bool check_uuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < 36; ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !is_hex(s[i])) return false;
  }
  return true;
}

bool check_ipv4(std::string_view s) {
  int parts = 0;
  size_t i = 0;
  while (true) {
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    std::string_view p = s.substr(i, j - i);
    if (p.empty() || p.size() > 3 || (p.size() > 1 && p[0] == '0') || to_int(p) > 255) return false;
    ++parts;
    if (j == s.size()) break;
    if (s[j] != '.') return false;
    i = j + 1;
  }
  return parts == 4;
}

bool check_ipv6(std::string_view s) {
  if (s.empty()) return false;
  // Optional trailing IPv4 takes two groups.
  int groups = 0;
  bool compressed = false;
  size_t i = 0;
  if (s.substr(0, 2) == "::") {
    compressed = true;
    i = 2;
    if (i == s.size()) return true;
  } else if (s[0] == ':') {
    return false;
  }
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && is_hex(s[j])) ++j;
    if (j < s.size() && s[j] == '.') {
      if (!check_ipv4(s.substr(i))) return false;
      groups += 2;
      i = s.size();
      break;
    }
    if (j == i || j - i > 4) return false;
    ++groups;
    if (j == s.size()) {
      i = j;
      break;
    }
    if (s[j] != ':') return false;
    if (j + 1 < s.size() && s[j + 1] == ':') {
      if (compressed) return false;
      compressed = true;
      i = j + 2;
      if (i == s.size()) break;
    } else {
      i = j + 1;
      if (i == s.size()) return false;
    }
  }
  return compressed ? groups < 8 : groups == 8;
}

bool check_hostname(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t i = 0;
  while (true) {
    size_t j = s.find('.', i);
    std::string_view label = s.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    if (j == std::string_view::npos) break;
    i = j + 1;
    if (i == s.size()) break;  // trailing dot
  }
  return true;
}

bool uri_char(unsigned char c) {
  if (c <= 0x20 || c >= 0x7F) return false;
  switch (c) {
    case '"': case '<': case '>': case '\\': case '^': case '`': case '{': case '|': case '}':
      return false;
    default:
      return true;
  }
}

bool check_uri(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  size_t i = 1;
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '+' || s[i] == '-' || s[i] == '.')) ++i;
  if (i >= s.size() || s[i] != ':') return false;
  for (size_t k = i + 1; k < s.size(); ++k) {
    auto c = static_cast<unsigned char>(s[k]);
    if (c == '%') {
      if (k + 2 >= s.size() || !is_hex(s[k + 1]) || !is_hex(s[k + 2])) return false;
      k += 2;
    } else if (!uri_char(c)) {
      return false;
    }
  }
  // Authority: a port, when present, is digits only.
  std::string_view rest = s.substr(i + 1);
  if (rest.substr(0, 2) == "//") {
    std::string_view auth = rest.substr(2, rest.find_first_of("/?#", 2) - 2);
    auto atp = auth.rfind('@');
    if (atp != std::string_view::npos) auth = auth.substr(atp + 1);
    size_t colon = auth.rfind(':');
    size_t bracket = auth.rfind(']');
    if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
      std::string_view port = auth.substr(colon + 1);
      for (char c : port)
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    if (auth.find('[') != std::string_view::npos && bracket == std::string_view::npos) return false;
  }
  return true;
}

// Formats defined as regular languages: checked by their generating regex, so the validator and
// the grammar agree by construction.
bool regex_defined(std::string_view f) {
  return f == "json-pointer" || f == "relative-json-pointer" || f == "duration" || f == "uri-reference";
}

bool check_by_regex(std::string_view f, std::string_view v) {
  static std::mutex mu;
  static std::map<std::string, CpDfa, std::less<>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(f);
  if (it == cache.end()) it = cache.emplace(std::string(f), compile_regex(*format_regex(f), true)).first;
  try {
    return it->second.matches(utf8_to_u32(v));
  } catch (const Error&) {
    return false;  // not UTF-8
  }
}

}  // namespace

bool is_checked_format(std::string_view f) {
  return f == "date" || f == "time" || f == "date-time" || f == "email" || f == "uuid" || f == "uri" ||
         f == "ipv4" || f == "ipv6" || f == "hostname" || regex_defined(f);
}

bool is_asserting_format(std::string_view f) {
  return f == "regex" || f == "iri" || f == "iri-reference" || f == "idn-email" || f == "idn-hostname" ||
         f == "uri-template";
}

bool check_format(std::string_view f, std::string_view v) {
  if (f == "date") return check_date(v);
  if (f == "time") return check_time(v);
  if (f == "date-time") return check_date_time(v);
  if (f == "email") return check_email(v);
  if (f == "uuid") return check_uuid(v);
  if (f == "uri") return check_uri(v);
  if (f == "ipv4") return check_ipv4(v);
  if (f == "ipv6") return check_ipv6(v);
  if (f == "hostname") return check_hostname(v);
  if (regex_defined(f)) return check_by_regex(f, v);
  return true;
}

bool format_regex_is_exact(std::string_view f) {
  return f == "date" || f == "uri" || f == "uuid" || f == "ipv4" || f == "ipv6" || regex_defined(f);
}

std::optional<std::string> format_check_regex(std::string_view f, int64_t* max_length) {
  *max_length = -1;
  if (format_regex_is_exact(f)) return format_regex(f);
  if (f == "email") {
    // check_email: a last '@' with a non-empty domain after it; the local part non-empty, not
    // starting or ending with '.', no ".."; no character at or below U+0020 anywhere.
    const std::string x = "[^\\x00-\\x20.]";
    return "^" + x + "(?:\\.?" + x + ")*@[^\\x00-\\x20@]+$";
  }
  if (f == "hostname") {
    // check_hostname: dot-separated labels of 1-63 letters, digits and inner '-', an optional
    // trailing dot, at most 253 characters (ASCII: code points = bytes).
    const std::string label = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    *max_length = 253;
    return "^" + label + "(?:\\." + label + ")*\\.?$";
  }
  return std::nullopt;
}

std::optional<std::string> format_regex(std::string_view f) {
  // Days per month; Feb 29 only in leap years. Over four-digit years the Gregorian rule is a
  // regular language: the last two digits a non-zero multiple of 4, or 00 after a multiple of 4.
  static const std::string kLeapYear = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
  static const std::string kDate =
      "(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|"
      "02-(?:0[1-9]|1[0-9]|2[0-8]))|" + kLeapYear + "-02-29)";
  // Leap seconds are not generated (a documented restriction: 60 is rejected).
  static const std::string kTime =
      "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
  if (f == "date") return "^" + kDate + "$";
  if (f == "time") return "^" + kTime + "$";
  if (f == "date-time") return "^" + kDate + "[Tt]" + kTime + "$";
  if (f == "uuid") {
    return "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
  }
  if (f == "ipv4") {
    return "^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$";
  }
  if (f == "ipv6") {
    // RFC 4291 text forms (RFC 3986 IPv6address): eight groups, or fewer around one "::", the
    // last two groups optionally written as a dotted IPv4 address. Exactly what check_ipv6 accepts.
    const std::string h = "[0-9A-Fa-f]{1,4}";
    const std::string v4 =
        "(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
    const std::string ls32 = "(?:" + h + ":" + h + "|" + v4 + ")";
    auto left = [&](int upto) {  // up to upto + 1 groups before the "::"
      return upto == 0 ? "(?:" + h + ")?" : "(?:(?:" + h + ":){0," + std::to_string(upto) + "}" + h + ")?";
    };
    std::string re = "^(?:(?:" + h + ":){6}" + ls32;
    re += "|::(?:" + h + ":){5}" + ls32;
    re += "|" + left(0) + "::(?:" + h + ":){4}" + ls32;
    re += "|" + left(1) + "::(?:" + h + ":){3}" + ls32;
    re += "|" + left(2) + "::(?:" + h + ":){2}" + ls32;
    re += "|" + left(3) + "::" + h + ":" + ls32;
    re += "|" + left(4) + "::" + ls32;
    re += "|" + left(5) + "::" + h;
    re += "|" + left(6) + "::)$";
    return re;
  }
  if (f == "email") {
    // A subset of what check_email accepts: dot-separated atoms on both sides.
    return "^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@"
           "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$";
  }
  if (f == "uri") {
    // Exactly check_uri: scheme ":" then URI characters (or %HH); with an authority ("//" up
    // to the first / ? #), a port after the host's last ':' (past any "[...]") is digits only,
    // and a '[' needs a ']'. Character classes by what they exclude:
    const std::string pct = "%[0-9A-Fa-f]{2}";
    auto cls = [&](const std::string& chars) { return "(?:[A-Za-z0-9\\-._~!$&'()*+,;=" + chars + "]|" + pct + ")"; };
    const std::string any = cls(":@/?#\\[\\]");   // every URI character
    const std::string auth = cls(":@\\[\\]");       // inside the authority
    const std::string host = cls(":\\[\\]");        // host and port (no '@')
    const std::string plain = cls("");              // host without ':' '[' ']'
    const std::string tail = cls("\\[");            // after the last ']', no ':' or ']'
    const std::string no_slash = cls(":@?#\\[\\]");
    const std::string port = ":[0-9]*";
    const std::string h_plain = "(?:(?:" + plain + "|:)*" + port + "|" + plain + "*)";
    const std::string h_bracket = host + "*\\](?:(?:" + tail + "|:)*" + port + "|" + tail + "*)";
    return "^[A-Za-z][A-Za-z0-9+.-]*:(?://(?:" + auth + "*@)?(?:" + h_plain + "|" + h_bracket + ")(?:[/?#]" + any +
           "*)?|/?(?:" + no_slash + any + "*)?)$";
  }
  if (f == "json-pointer") return "^(?:/(?:[^~/]|~[01])*)*$";  // RFC 6901
  if (f == "relative-json-pointer") return "^(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^~/]|~[01])*)*)$";
  if (f == "duration") {
    // RFC 3339 appendix A (ISO 8601 durations): P then date [time], time, or weeks.
    const std::string d = "[0-9]+";
    const std::string t = "T(?:" + d + "H(?:" + d + "M(?:" + d + "S)?)?|" + d + "M(?:" + d + "S)?|" + d + "S)";
    const std::string date = "(?:" + d + "D|" + d + "M(?:" + d + "D)?|" + d + "Y(?:" + d + "M(?:" + d + "D)?)?)";
    return "^P(?:" + date + "(?:" + t + ")?|" + t + "|" + d + "W)$";
  }
  if (f == "uri-reference") {
    // RFC 3986: a URI (as `uri` above) or a relative reference, whose first path segment has no
    // ':' (else it would read as a scheme). Characters: the URI set or %HH.
    const std::string pct = "%[0-9A-Fa-f]{2}";
    const std::string any = "(?:[A-Za-z0-9\\-._~!$&'()*+,;=:@/?#\\[\\]]|" + pct + ")";
    const std::string seg0 = "(?:[A-Za-z0-9\\-._~!$&'()*+,;=@\\[\\]]|" + pct + ")";  // no ':' '/' '?' '#'
    std::string uri = *format_regex("uri");
    uri = uri.substr(1, uri.size() - 2);  // strip ^ $
    return "^(?:" + uri + "|(?:" + seg0 + "*(?:[/?#]" + any + "*)?))$";
  }
  if (f == "hostname") {
    return "^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$";
  }
  return std::nullopt;
}

}  // namespace ringlm::guided
