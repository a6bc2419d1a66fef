// The one UTF-8 codec of ringlm: what a well-formed character is (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), decoding and encoding. The tokenizer, the
// streaming decoder and the Jinja engine all use these rules, so a byte sequence is valid or
// invalid the same way everywhere, and an invalid byte always becomes one U+FFFD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringlm::utf8 {

using std::size_t;
using std::uint32_t;

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 character starting at s[i], or 0 if the bytes there are
// not a complete, valid character (stray continuation byte, overlong form, surrogate,
// value above U+10FFFF, or a truncated sequence).
// What a multi-byte lead byte promises: the sequence length (0: not a valid lead byte) and
// the allowed range of the second byte (which rules out overlong forms, surrogates and values
// above U+10FFFF).
struct LeadByte {
  size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
};

inline LeadByte lead_byte(unsigned char b0) {
  LeadByte l;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    l.need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    l.need = 3;
    if (b0 == 0xE0) l.lo = 0xA0;
    if (b0 == 0xED) l.hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    l.need = 4;
    if (b0 == 0xF0) l.lo = 0x90;
    if (b0 == 0xF4) l.hi = 0x8F;
  }
  return l;
}

inline size_t char_len(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  const LeadByte l = lead_byte(b0);
  const size_t need = l.need;
  const unsigned char lo = l.lo, hi = l.hi;
  if (need == 0) return 0;
  if (i + need > s.size()) return 0;
  const auto b1 = static_cast<unsigned char>(s[i + 1]);
  if (b1 < lo || b1 > hi) return 0;
  for (size_t k = 2; k < need; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < 0x80 || b > 0xBF) return 0;
  }
  return need;
}

// Whether the bytes s[i..] are a proper prefix of some valid character (more bytes could
// complete it). Used by the streaming decoder to decide between "wait" and "invalid".
inline bool is_incomplete_prefix(std::string_view s, size_t i) {
  const size_t avail = s.size() - i;
  const LeadByte l = lead_byte(static_cast<unsigned char>(s[i]));
  const size_t need = l.need;
  const unsigned char lo = l.lo, hi = l.hi;
  if (need == 0) return false;
  if (avail >= need) return false;
  if (avail >= 2) {
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b1 < lo || b1 > hi) return false;
  }
  for (size_t k = 2; k < avail; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < 0x80 || b > 0xBF) return false;
  }
  return true;
}

inline bool is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = char_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// Code point of the valid character of length n at s[i].
inline uint32_t decode_at(std::string_view s, size_t i, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + i);
  switch (n) {
    case 1: return p[0];
    case 2: return ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    case 3: return ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    default: return ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
  }
}

// Unicode White_Space, as Rust's char::is_whitespace (used by Hugging Face lstrip/rstrip).
inline bool is_white_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// Appends the UTF-8 form of code point `cp` (callers pass values up to U+10FFFF).
inline void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The code points of `s`; each byte that does not start a valid character becomes U+FFFD.
inline std::vector<char32_t> decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = char_len(s, i);
    if (n == 0) {
      out.push_back(0xFFFD);
      ++i;
    } else {
      out.push_back(decode_at(s, i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace ringlm::utf8
