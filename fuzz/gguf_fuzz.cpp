// libFuzzer target for the GGUF parser: any input must either parse or raise ringlm::Error;
// for inputs that parse, every accessor a loader uses (metadata rendering, typed arrays,
// gemma4 tensor source and config, tokenizer metadata, dequantization of the first blocks
// of each tensor) must stay inside the buffer (ASan/UBSan check that).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/gguf_gemma4.h"
#include "io/gguf_reader.h"
#include "io/gguf_tokenizer.h"
#include "kernels/dequant_ggml.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ringlm;
  std::unique_ptr<io::GgufFile> file;
  try {
    file = io::GgufFile::from_memory(data, size, "fuzz.gguf");
  } catch (const Error&) {
    return 0;
  }
  for (const auto& kv : file->metadata()) {
    (void)kv.value.to_string(4);
    if (kv.value.type == io::GgufValueType::ARRAY) {
      const auto& a = kv.value.arr;
      try { (void)a.strings("x"); } catch (const Error&) {}
      try { (void)a.ints("x"); } catch (const Error&) {}
      try { (void)a.floats("x"); } catch (const Error&) {}
      try { (void)a.bools("x"); } catch (const Error&) {}
      if (a.count) (void)a.at(a.count - 1).to_string(2);
    }
  }
  std::vector<float> buf;
  for (const auto& t : file->tensors()) {
    const auto& info = t.type_info();
    if (!info.dtype) continue;
    const std::int64_t n = std::min<std::int64_t>(t.numel(), 4 * info.block_elems);
    buf.resize(static_cast<std::size_t>(n));
    kernels::dequantize_row(*info.dtype, t.data, buf.data(), n);
  }
  std::shared_ptr<const io::GgufFile> shared(std::move(file));
  // Every tensor under its own name: the gemma4 names are the model's (model/tensor_manifest.h,
  // plain string tables); the source's type and shape handling is what this exercises.
  const auto same_name = [](std::string_view n) { return std::optional<std::string>(std::string(n)); };
  try { io::GgufTensorSource src(shared, same_name); (void)src.names(); } catch (const Error&) {}
  try { (void)io::gemma4_text_config(*shared); } catch (const Error&) {}
  try { (void)io::gguf_tokenizer_data(*shared); } catch (const Error&) {}
  return 0;
}
