#include "io/gguf_types.h"

#include <array>

#include "util/error.h"

namespace ringlm::io {

namespace {

// Every type id ggml has assigned (ids 4, 5 and 31-33 were retired and are absent). Sizes are
// those of ggml's block structs; ringlm computes only with the ones that carry a DType.
constexpr std::array<GgmlTypeInfo, 32> kTypes = {{
    {0, "F32", 1, 4, DType::F32},
    {1, "F16", 1, 2, DType::F16},
    {2, "Q4_0", 32, 18, DType::Q4_0},
    {3, "Q4_1", 32, 20, DType::Q4_1},
    {6, "Q5_0", 32, 22, DType::Q5_0},
    {7, "Q5_1", 32, 24, DType::Q5_1},
    {8, "Q8_0", 32, 34, DType::Q8_0},
    {9, "Q8_1", 32, 36, std::nullopt},
    {10, "Q2_K", 256, 84, DType::Q2_K},
    {11, "Q3_K", 256, 110, DType::Q3_K},
    {12, "Q4_K", 256, 144, DType::Q4_K},
    {13, "Q5_K", 256, 176, DType::Q5_K},
    {14, "Q6_K", 256, 210, DType::Q6_K},
    {15, "Q8_K", 256, 292, std::nullopt},
    {16, "IQ2_XXS", 256, 66, DType::IQ2_XXS},
    {17, "IQ2_XS", 256, 74, DType::IQ2_XS},
    {18, "IQ3_XXS", 256, 98, DType::IQ3_XXS},
    {19, "IQ1_S", 256, 50, DType::IQ1_S},
    {20, "IQ4_NL", 32, 18, DType::IQ4_NL},
    {21, "IQ3_S", 256, 110, DType::IQ3_S},
    {22, "IQ2_S", 256, 82, DType::IQ2_S},
    {23, "IQ4_XS", 256, 136, DType::IQ4_XS},
    {24, "I8", 1, 1, DType::I8},
    {25, "I16", 1, 2, std::nullopt},
    {26, "I32", 1, 4, std::nullopt},
    {27, "I64", 1, 8, std::nullopt},
    {28, "F64", 1, 8, std::nullopt},
    {29, "IQ1_M", 256, 56, DType::IQ1_M},
    {30, "BF16", 1, 2, DType::BF16},
    {34, "TQ1_0", 256, 54, std::nullopt},
    {35, "TQ2_0", 256, 66, std::nullopt},
    {39, "MXFP4", 32, 17, std::nullopt},
}};

}  // namespace

const GgmlTypeInfo* ggml_type_info(std::uint32_t id) {
  for (const auto& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

std::uint32_t ggml_type_of(DType t) {
  for (const auto& info : kTypes)
    if (info.dtype && *info.dtype == t) return info.id;
  fail("ggml_type_of: dtype ", dtype_name(t), " has no ggml type");
}

std::string ggml_type_name(std::uint32_t id) {
  if (const auto* t = ggml_type_info(id)) return t->name;
  return "type " + std::to_string(id);
}

const char* gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: return "u8";
    case GgufValueType::I8: return "i8";
    case GgufValueType::U16: return "u16";
    case GgufValueType::I16: return "i16";
    case GgufValueType::U32: return "u32";
    case GgufValueType::I32: return "i32";
    case GgufValueType::F32: return "f32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::U64: return "u64";
    case GgufValueType::I64: return "i64";
    case GgufValueType::F64: return "f64";
  }
  return "?";
}

std::uint64_t gguf_value_type_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::BOOL: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
    case GgufValueType::STRING: case GgufValueType::ARRAY: return 0;
  }
  return 0;
}

}  // namespace ringlm::io
