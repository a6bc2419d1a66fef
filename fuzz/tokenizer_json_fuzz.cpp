// libFuzzer target for tokenizer.json loading: any bytes must either load or raise
// ringlm::Error. A tokenizer that loads is exercised on a short fixed text.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ringlm;
  const auto path = fuzz::write_scratch("tokenizer.json", data, size);
  try {
    const Tokenizer tok = Tokenizer::load(path);
    const auto ids = tok.encode("Hello wörld <bos> 12\n");
    (void)tok.decode(ids);
  } catch (const Error&) {
  }
  return 0;
}
