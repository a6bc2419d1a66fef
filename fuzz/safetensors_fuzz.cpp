// libFuzzer target for the safetensors header parser: any file must either open or raise
// ringlm::Error; every tensor it reports must lie inside the mapping (ASan checks the reads).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "io/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ringlm;
  const auto path = fuzz::write_scratch("model.safetensors", data, size);
  try {
    io::SafetensorsFile file(path);
    volatile std::uint8_t sink = 0;
    for (const auto& t : file.tensors()) {
      const std::uint8_t* bytes = t.data;
      const std::uint64_t n = t.nbytes;
      if (n) sink = sink ^ bytes[0] ^ bytes[n - 1];
    }
  } catch (const Error&) {
  }
  return 0;
}
