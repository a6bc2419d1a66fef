// The element types a stored tensor can have. A leaf header (no other ringlm include), so
// the kernels, which need the enum but nothing else of the io module, do not depend on io.
// It stays in namespace io, where every user already spells it io::DType.
#pragma once

#include <cstdint>

namespace ringlm::io {

enum class DType : std::uint8_t {
  F32, F16, BF16, I8,
  Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K,  // ggml block formats
  Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL, IQ4_XS,  // more ggml block formats (GGUF input only)
  IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M,  // codebook formats (GGUF input only)
  I32, I64,  // integer tables (the assistant drafter's token ordering), never a matrix
};

constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I8: return "I8";
    case DType::Q8_0: return "Q8_0";
    case DType::Q4_0: return "Q4_0";
    case DType::Q4_1: return "Q4_1";
    case DType::Q4_K: return "Q4_K";
    case DType::Q5_K: return "Q5_K";
    case DType::Q6_K: return "Q6_K";
    case DType::Q5_0: return "Q5_0";
    case DType::Q5_1: return "Q5_1";
    case DType::Q2_K: return "Q2_K";
    case DType::Q3_K: return "Q3_K";
    case DType::IQ4_NL: return "IQ4_NL";
    case DType::IQ4_XS: return "IQ4_XS";
    case DType::IQ2_XXS: return "IQ2_XXS";
    case DType::IQ2_XS: return "IQ2_XS";
    case DType::IQ2_S: return "IQ2_S";
    case DType::IQ3_XXS: return "IQ3_XXS";
    case DType::IQ3_S: return "IQ3_S";
    case DType::IQ1_S: return "IQ1_S";
    case DType::IQ1_M: return "IQ1_M";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
  }
  return "?";
}

}  // namespace ringlm::io
