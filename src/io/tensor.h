// A named tensor as stored in a checkpoint file: dtype, shape and a view of its bytes
// inside a memory mapping. Every checkpoint format (safetensors, GGUF, ringlm's packed
// directory) presents its tensors through TensorSource, so the model loader is format-blind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/dtype.h"

namespace ringlm::io {

struct TensorView {
  std::string name;               // canonical name (Hugging Face, without the model prefix)
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;  // row-major, PyTorch order: [out, in] for a linear layer
  const std::uint8_t* data = nullptr;
  std::uint64_t nbytes = 0;
  std::string file;               // file it lives in, for error messages
  // Q4_0 only: true = the kernels' q4p16 layout (kernels/q4_packed.h, ringlm's packed model
  // directory), false = plain ggml blocks (GGUF).
  bool packed = false;
  // I8 only: one f32 scale per row (value = scale[row] * code), e.g. the PLE sidecar tables.
  const float* row_scales = nullptr;

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  // The tensor with this canonical name, or nullptr if the checkpoint does not have it.
  virtual const TensorView* find(std::string_view name) const = 0;
  virtual std::vector<std::string> names() const = 0;
  // Human-readable description of where the tensors come from (directory or file).
  virtual std::string describe() const = 0;
  // MappedFile::drop_pages on whichever of this source's file mappings holds [p, p + n);
  // false (nothing done) when none does, e.g. for memory the loader converted into.
  virtual bool drop_pages(const void* p, std::size_t n) const { return false; }
};

}  // namespace ringlm::io
