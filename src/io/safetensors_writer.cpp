#include "io/safetensors_writer.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace ringlm::io {

std::uint64_t TensorSpec::nbytes() const {
  std::uint64_t n = dtype == DType::I64 ? 8 : dtype == DType::F32 || dtype == DType::I32 ? 4 : 2;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorSpec>& tensors,
                       const TensorFiller& fill) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16 && t.dtype != DType::I32 &&
        t.dtype != DType::I64)
      fail(path.string(), ": tensor ", t.name, ": cannot write dtype ", dtype_name(t.dtype));
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep tensor data 8-byte aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail_io(path.string(), ": cannot create");
  std::uint64_t len = text.size();
  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<unsigned char>(len >> (8 * i));
  out.write(reinterpret_cast<const char*>(len_bytes), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& t : tensors) {
    std::uint64_t written = 0;
    fill(t, [&](const void* data, std::size_t n) {
      out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
      written += n;
    });
    if (written != t.nbytes()) fail(path.string(), ": tensor ", t.name, ": wrote ", written, " bytes, expected ", t.nbytes());
  }
  out.close();
  if (!out) fail_io(path.string(), ": write failed (disk full?)");
}

}  // namespace ringlm::io
