#include "guided/grammar.h"

#include <array>

#include "util/error.h"

namespace ringlm::guided {

namespace {

constexpr size_t kMaxGrammarStates = 4'000'000;

// Splits [lo, hi] (no surrogates inside) into runs whose UTF-8 encodings are products of byte
// ranges, calling emit(ranges, n) with n byte ranges.
template <typename Emit>
void utf8_sequences(uint32_t lo, uint32_t hi, Emit&& emit) {
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) utf8_sequences(lo, 0xD7FF, emit);
    if (hi > 0xDFFF) utf8_sequences(0xE000, hi, emit);
    return;
  }
  for (uint32_t b : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= b && hi > b) {
      utf8_sequences(lo, b, emit);
      utf8_sequences(b + 1, hi, emit);
      return;
    }
  }
  int n = lo < 0x80 ? 1 : lo < 0x800 ? 2 : lo < 0x10000 ? 3 : 4;
  for (int i = 1; i < n; ++i) {
    uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_sequences(lo, lo | m, emit);
        utf8_sequences((lo | m) + 1, hi, emit);
        return;
      }
      if ((hi & m) != m) {
        utf8_sequences(lo, (hi & ~m) - 1, emit);
        utf8_sequences(hi & ~m, hi, emit);
        return;
      }
    }
  }
  std::string a, b;
  append_utf8(a, lo);
  append_utf8(b, hi);
  std::array<std::pair<uint8_t, uint8_t>, 4> ranges{};
  for (int i = 0; i < n; ++i) ranges[i] = {uint8_t(a[i]), uint8_t(b[i])};
  emit(ranges, n);
}

const char* short_escape(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return nullptr;
  }
}

}  // namespace

std::string json_escape(std::string_view utf8) {
  std::string out;
  for (char ch : utf8) {
    auto c = static_cast<unsigned char>(ch);
    if (const char* e = short_escape(c)) {
      out += e;
    } else if (c < 0x20) {
      static const char* kHex = "0123456789abcdef";
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

uint32_t GrammarBuilder::new_state() {
  if (g_.states.size() >= kMaxGrammarStates) fail("schema grammar is too large (more than ", kMaxGrammarStates, " states)");
  g_.states.emplace_back();
  return uint32_t(g_.states.size() - 1);
}

uint32_t GrammarBuilder::new_rule() {
  uint32_t s = new_state();
  g_.rule_start.push_back(s);
  return uint32_t(g_.rule_start.size() - 1);
}

void GrammarBuilder::bytes(uint32_t from, uint32_t to, uint8_t lo, uint8_t hi) {
  g_.states[from].edges.push_back({lo, hi, to});
}

void GrammarBuilder::eps(uint32_t from, uint32_t to) { g_.states[from].eps.push_back(to); }

void GrammarBuilder::call(uint32_t from, uint32_t rule, uint32_t to) { g_.states[from].calls.push_back({rule, to}); }

void GrammarBuilder::literal(uint32_t from, uint32_t to, std::string_view text) {
  if (text.empty()) {
    eps(from, to);
    return;
  }
  uint32_t cur = from;
  for (size_t i = 0; i < text.size(); ++i) {
    uint32_t next = i + 1 == text.size() ? to : new_state();
    auto b = static_cast<uint8_t>(text[i]);
    bytes(cur, next, b, b);
    cur = next;
  }
}

void GrammarBuilder::utf8_chars(uint32_t from, uint32_t to, const CharSet& set) {
  for (auto [lo, hi] : set.ranges()) {
    utf8_sequences(lo, hi, [&](const std::array<std::pair<uint8_t, uint8_t>, 4>& r, int n) {
      uint32_t cur = from;
      for (int i = 0; i < n; ++i) {
        uint32_t next = i + 1 == n ? to : new_state();
        bytes(cur, next, r[i].first, r[i].second);
        cur = next;
      }
    });
  }
}

void GrammarBuilder::json_chars(uint32_t from, uint32_t to, const CharSet& set) {
  // Plain code points go out as UTF-8; the others share one "\" state and one "\u00" chain.
  CharSet plain;
  uint32_t backslash = UINT32_MAX, u00_0 = UINT32_MAX, u00_1 = UINT32_MAX;
  auto ensure_backslash = [&] {
    if (backslash == UINT32_MAX) {
      backslash = new_state();
      bytes(from, backslash, '\\', '\\');
    }
  };
  for (auto [lo, hi] : set.ranges()) {
    for (uint32_t cp = lo; cp <= hi && cp < 0x60; ++cp) {
      if (const char* e = short_escape(cp)) {
        ensure_backslash();
        bytes(backslash, to, uint8_t(e[1]), uint8_t(e[1]));
      } else if (cp < 0x20) {
        ensure_backslash();
        if (u00_0 == UINT32_MAX) {
          uint32_t u = new_state(), z1 = new_state(), z2 = new_state();
          bytes(backslash, u, 'u', 'u');
          bytes(u, z1, '0', '0');
          bytes(z1, z2, '0', '0');
          u00_0 = new_state();
          u00_1 = new_state();
          bytes(z2, u00_0, '0', '0');
          bytes(z2, u00_1, '1', '1');
        }
        static const char* kHex = "0123456789abcdef";
        uint8_t d = uint8_t(kHex[cp & 15]);
        bytes(cp < 0x10 ? u00_0 : u00_1, to, d, d);
      } else {
        plain.add(cp, cp);
      }
    }
    if (hi >= 0x60) plain.add(std::max(lo, 0x60u), hi);
  }
  utf8_chars(from, to, plain);
}

Grammar GrammarBuilder::finish(uint32_t root_rule) {
  g_.root_rule = root_rule;
  return std::move(g_);
}

}  // namespace ringlm::guided
