// GGUF reader (versions 2 and 3, little-endian). The whole file is memory-mapped; the
// header is parsed with a bounds-checked cursor, and metadata strings, arrays and tensor
// data stay views into the mapping. Every count, length, offset and shape is validated
// before use: a malformed file gives a ringlm::Error naming the file, the key or tensor,
// and the byte offset, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/gguf_types.h"
#include "io/mapped_file.h"

namespace ringlm::io {

class GgufValue;

// An array value: elements of one type, stored in place in the file (already validated).
class GgufArray {
 public:
  GgufValueType elem_type = GgufValueType::U8;
  std::uint64_t count = 0;
  const std::uint8_t* data = nullptr;  // first element
  std::uint64_t nbytes = 0;            // total encoded size of the elements

  // Element i decoded as a value (walks the encoding for STRING/ARRAY elements: O(i)).
  GgufValue at(std::uint64_t i) const;
  // All elements decoded (nested arrays stay views).
  std::vector<GgufValue> elements() const;
  // Typed bulk accessors; throw ringlm::Error naming `what` if the element type differs.
  std::vector<std::string_view> strings(std::string_view what) const;
  // Any integer element type, converted to int64 (u64 values above INT64_MAX are an error).
  std::vector<std::int64_t> ints(std::string_view what) const;
  // F32/F64 (or integers) as float.
  std::vector<float> floats(std::string_view what) const;
  std::vector<bool> bools(std::string_view what) const;
};

class GgufValue {
 public:
  GgufValueType type = GgufValueType::U8;
  std::uint64_t u = 0;   // U8/U16/U32/U64/BOOL
  std::int64_t i = 0;    // I8/I16/I32/I64
  double f = 0.0;        // F32/F64
  std::string_view str;  // STRING (view into the mapping)
  GgufArray arr;         // ARRAY

  bool is_integer() const;
  // Human-readable rendering; arrays longer than `max_elems` are abbreviated.
  std::string to_string(std::size_t max_elems = 8) const;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
  std::uint64_t offset = 0;  // byte offset of the key in the file
};

struct GgufTensorInfo {
  std::string name;
  std::uint32_t type = 0;               // ggml type id (always a known one)
  std::vector<std::int64_t> ne;         // ggml order: ne[0] is the contiguous dimension
  std::uint64_t offset = 0;             // relative to the data section, as stored
  std::uint64_t file_offset = 0;        // absolute offset of the data in the file
  std::uint64_t nbytes = 0;
  std::uint64_t info_offset = 0;        // where the tensor info starts, for messages
  const std::uint8_t* data = nullptr;   // into the mapping

  std::int64_t numel() const;
  const GgmlTypeInfo& type_info() const { return *ggml_type_info(type); }
};

class GgufFile {
 public:
  // Maps and parses `path`.
  explicit GgufFile(const std::filesystem::path& path);
  // Parses bytes owned by the caller (which must outlive the object); `label` stands for the
  // file name in messages. Used by the fuzzer and by tests.
  static std::unique_ptr<GgufFile> from_memory(const std::uint8_t* data, std::size_t size,
                                               std::string label);

  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return label_; }
  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }
  std::size_t size() const { return size_; }

  const std::vector<GgufKeyValue>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;
  // Typed lookups: the value of `key`, converted, or an error naming the file and key when
  // it is missing or of an incompatible type. The *_or forms return `fallback` if missing.
  std::string_view get_string(std::string_view key) const;
  std::int64_t get_int(std::string_view key) const;
  std::int64_t get_int_or(std::string_view key, std::int64_t fallback) const;
  double get_float(std::string_view key) const;
  double get_float_or(std::string_view key, double fallback) const;
  bool get_bool_or(std::string_view key, bool fallback) const;
  const GgufArray& get_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  // The file mapping (empty when the bytes were handed in by the caller).
  const MappedFile& mapping() const { return mapping_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

 private:
  GgufFile() = default;
  void parse();

  MappedFile mapping_;
  const std::uint8_t* base_ = nullptr;
  std::size_t size_ = 0;
  std::string label_;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> kv_;
  std::unordered_map<std::string, std::size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, std::size_t> tensor_index_;
};

// True if the file starts with the GGUF magic (cheap; used to pick a loader).
bool is_gguf_file(const std::filesystem::path& path);

}  // namespace ringlm::io
