// GGUF writer (version 3, little-endian): metadata entries and tensors in any ggml type,
// laid out as llama.cpp expects (general.alignment honoured, every tensor's data aligned).
// Used to write test files and by `ringlm convert --to gguf`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "io/gguf_types.h"

namespace ringlm::io {

class GgufWriter {
 public:
  // Alignment of the data section and of each tensor; written as general.alignment when it
  // differs from GGUF's default of 32.
  explicit GgufWriter(std::uint32_t alignment = 32);

  void add_u8(std::string_view key, std::uint8_t v);
  void add_i8(std::string_view key, std::int8_t v);
  void add_u16(std::string_view key, std::uint16_t v);
  void add_i16(std::string_view key, std::int16_t v);
  void add_u32(std::string_view key, std::uint32_t v);
  void add_i32(std::string_view key, std::int32_t v);
  void add_u64(std::string_view key, std::uint64_t v);
  void add_i64(std::string_view key, std::int64_t v);
  void add_f32(std::string_view key, float v);
  void add_f64(std::string_view key, double v);
  void add_bool(std::string_view key, bool v);
  void add_string(std::string_view key, std::string_view v);
  void add_array_u32(std::string_view key, std::span<const std::uint32_t> v);
  void add_array_i32(std::string_view key, std::span<const std::int32_t> v);
  void add_array_f32(std::string_view key, std::span<const float> v);
  void add_array_bool(std::string_view key, const std::vector<bool>& v);
  void add_array_string(std::string_view key, const std::vector<std::string>& v);
  // An array whose elements are already encoded (`count` elements of `elem_type` in `bytes`),
  // for nested arrays and unusual element types.
  void add_array_encoded(std::string_view key, GgufValueType elem_type, std::uint64_t count,
                         std::span<const std::uint8_t> bytes);

  // A tensor of ggml type `type` with ggml shape `ne` (ne[0] contiguous). The data is
  // copied; its size must match the type's block geometry.
  void add_tensor(std::string_view name, std::uint32_t type, std::vector<std::int64_t> ne,
                  std::span<const std::uint8_t> data);
  // A tensor whose bytes are produced only while the file is written: `fill` receives a
  // buffer of exactly the tensor's size. Keeps converting a large model to one tensor in
  // memory at a time.
  using FillFn = std::function<void(std::uint8_t* dst)>;
  void add_tensor_lazy(std::string_view name, std::uint32_t type, std::vector<std::int64_t> ne, FillFn fill);

  // The complete file.
  std::vector<std::uint8_t> bytes() const;
  // Writes the file atomically (temporary file, then rename).
  void write(const std::filesystem::path& path) const;

 private:
  struct Tensor {
    std::string name;
    std::uint32_t type;
    std::vector<std::int64_t> ne;
    std::uint64_t nbytes;
    std::vector<std::uint8_t> data;  // empty when `fill` produces it
    FillFn fill;
  };
  std::uint64_t check_tensor(std::string_view name, std::uint32_t type, const std::vector<std::int64_t>& ne);
  std::vector<std::uint8_t> header_bytes() const;  // up to the start of the data section
  const std::uint8_t* tensor_bytes(const Tensor& t, std::vector<std::uint8_t>& scratch) const;
  void begin_kv(std::string_view key, GgufValueType type);

  std::uint32_t alignment_;
  std::uint64_t n_kv_ = 0;
  std::vector<std::uint8_t> kv_bytes_;
  std::unordered_set<std::string> keys_;
  std::vector<Tensor> tensors_;
  std::unordered_set<std::string> tensor_names_;
};

// Encoding helpers for add_array_encoded (little-endian append).
void gguf_append_string(std::vector<std::uint8_t>& out, std::string_view s);
void gguf_append_bytes(std::vector<std::uint8_t>& out, const void* data, std::size_t n);
template <typename T>
void gguf_append(std::vector<std::uint8_t>& out, T v) {
  gguf_append_bytes(out, &v, sizeof(T));
}

}  // namespace ringlm::io
