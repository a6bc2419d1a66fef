#include "chat/jinja/text.h"

#include "util/utf8.h"

namespace ringlm::jinja::text {

std::vector<char32_t> decode(std::string_view s) { return utf8::decode(s); }

std::string encode(const std::vector<char32_t>& cps, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end && i < cps.size(); ++i) utf8::append(out, cps[i]);
  return out;
}

std::size_t length(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool is_space(char32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E:
    case 0x1F: case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

std::string strip(std::string_view s, bool left, bool right, const std::string* chars) {
  // Fast path: ASCII whitespace at both ends only.
  auto cps = decode(s);
  std::vector<char32_t> set;
  if (chars) set = decode(*chars);
  auto strippable = [&](char32_t c) {
    if (!chars) return is_space(c);
    for (char32_t x : set)
      if (x == c) return true;
    return false;
  };
  std::size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strippable(cps[b])) ++b;
  if (right)
    while (e > b && strippable(cps[e - 1])) --e;
  if (b == 0 && e == cps.size()) return std::string(s);
  return encode(cps, b, e);
}

namespace {

// Simple one-to-one case mappings for the scripts chat content commonly uses.
char32_t to_upper_cp(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17E && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149) {
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_upper) return (c % 2 == 0) ? c - 1 : c;
    return (c % 2 == 1) ? c - 1 : c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

char32_t to_lower_cp(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x17E && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149) {
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_upper) return (c % 2 == 1) ? c + 1 : c;
    return (c % 2 == 0) ? c + 1 : c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

bool is_cased_letter(char32_t c) { return to_upper_cp(c) != c || to_lower_cp(c) != c || c == 0xDF; }

}  // namespace

std::string upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : decode(s)) {
    if (c == 0xDF) {
      out += "SS";  // Python: 'ß'.upper() == 'SS'
      continue;
    }
    utf8::append(out, to_upper_cp(c));
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : decode(s)) utf8::append(out, to_lower_cp(c));
  return out;
}

std::string capitalize(std::string_view s) {
  auto cps = decode(s);
  std::string out;
  for (std::size_t i = 0; i < cps.size(); ++i) utf8::append(out, i == 0 ? to_upper_cp(cps[i]) : to_lower_cp(cps[i]));
  return out;
}

std::string title(std::string_view s) {
  // Python str.title(): a cased letter starts a word if the previous character is not cased.
  std::string out;
  bool prev_cased = false;
  for (char32_t c : decode(s)) {
    bool cased = is_cased_letter(c);
    utf8::append(out, cased ? (prev_cased ? to_lower_cp(c) : to_upper_cp(c)) : c);
    prev_cased = cased;
  }
  return out;
}

std::string title_words(std::string_view s) {
  std::string out;
  bool word_start = true;
  for (char32_t c : decode(s)) {
    bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_space(c);
    if (sep) {
      utf8::append(out, c);
      word_start = true;
      continue;
    }
    utf8::append(out, word_start ? to_upper_cp(c) : to_lower_cp(c));
    word_start = false;
  }
  return out;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, long long count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` before every code point and at the end.
    auto cps = decode(s);
    long long done = 0;
    for (std::size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i < cps.size()) utf8::append(out, cps[i]);
    }
    return out;
  }
  std::size_t pos = 0;
  long long done = 0;
  while (count < 0 || done < count) {
    std::size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

}  // namespace ringlm::jinja::text
