// The compute shaders (src/vulkan/shaders/*.comp), compiled to SPIR-V by glslc at build time
// and embedded as byte arrays (cmake/EmbedSpirv.cmake writes the table).
#pragma once

#include <cstddef>
#include <string_view>

namespace ringlm::vulkan {

struct ShaderBinary {
  const char* name;             // the source file's name without ".comp"
  const unsigned char* spirv;   // 4-byte aligned
  std::size_t bytes;
};

extern const ShaderBinary kShaders[];
extern const std::size_t kShaderCount;

// The shader called `name`; throws ringlm::Error (internal) if the build did not embed it.
const ShaderBinary& shader_binary(std::string_view name);

}  // namespace ringlm::vulkan
