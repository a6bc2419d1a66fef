// libFuzzer target for the BPE encoder over the real Gemma 4 tokenizer (loaded once, from
// $RINGLM_TOKENIZER_DIR or the repository's assets/gemma4-tokenizer). Every input must encode with
// parse_special on and off; for valid UTF-8 input with parse_special off, decoding the ids
// must give back the input, except that a literal U+2581 comes back as a space: the Gemma
// tokenizer's normalizer writes spaces as U+2581 and its decoder turns every U+2581 into a
// space (Hugging Face tokenizers does the same).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

#ifndef RINGLM_DEFAULT_TOKENIZER_DIR
#define RINGLM_DEFAULT_TOKENIZER_DIR "assets/gemma4-tokenizer"
#endif

namespace {

// Loaded in LLVMFuzzerInitialize, before libFuzzer starts timing inputs: the 262k-token load
// takes ~10 s in the instrumented -O0 build, as long as CI's whole -timeout for one input.
const ringlm::Tokenizer* g_tokenizer = nullptr;

const ringlm::Tokenizer& tokenizer() {
  static const ringlm::Tokenizer tok = [] {
    const char* env = std::getenv("RINGLM_TOKENIZER_DIR");
    const std::string dir = env ? env : std::string(RINGLM_DEFAULT_TOKENIZER_DIR);
    return ringlm::Tokenizer::load(dir);
  }();
  return tok;
}

std::string expected_decode(std::string_view s) {
  static constexpr std::string_view kMetaspace = "\xe2\x96\x81";
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s.substr(i, kMetaspace.size()) == kMetaspace) {
      out += ' ';
      i += kMetaspace.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n;
    std::uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
    else return false;
    for (int k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_tokenizer = &tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const ringlm::Tokenizer& tok = g_tokenizer ? *g_tokenizer : tokenizer();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ringlm::EncodeOptions special;
  special.parse_special = true;
  ringlm::EncodeOptions plain;
  plain.parse_special = false;
  const auto with_special = tok.encode(text, special);
  (void)tok.decode(with_special);
  const auto ids = tok.encode(text, plain);
  const std::string back = tok.decode(ids);
  if (valid_utf8(text) && back != expected_decode(text)) {
    std::fprintf(stderr, "round trip mismatch: %zu input bytes, %zu decoded bytes\n", text.size(), back.size());
    std::abort();
  }
  return 0;
}
