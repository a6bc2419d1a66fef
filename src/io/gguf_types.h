// The two type vocabularies of a GGUF file: ggml tensor types (with their block geometry)
// and metadata value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "io/tensor.h"

namespace ringlm::io {

// Geometry of one ggml tensor type: `block_elems` values take `block_bytes` bytes.
struct GgmlTypeInfo {
  std::uint32_t id;
  const char* name;
  std::int64_t block_elems;
  std::int64_t block_bytes;
  std::optional<DType> dtype;  // set when ringlm can compute with the type
};

// The ggml type with this id, or nullptr if the id is not a ggml type this build knows.
const GgmlTypeInfo* ggml_type_info(std::uint32_t id);
// The ggml type id for a ringlm dtype (every DType has one).
std::uint32_t ggml_type_of(DType t);
// "Q4_K" or "type 77" for unknown ids.
std::string ggml_type_name(std::uint32_t id);

enum class GgufValueType : std::uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
inline constexpr std::uint32_t kGgufValueTypeCount = 13;

const char* gguf_value_type_name(GgufValueType t);
// Size in bytes of a fixed-size value type; 0 for STRING and ARRAY.
std::uint64_t gguf_value_type_size(GgufValueType t);

}  // namespace ringlm::io
