// Streaming safetensors writer: the header is computed from the tensor list, then each
// tensor's bytes are produced by a callback in order, so multi-GB files never sit in memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "io/tensor.h"

namespace ringlm::io {

struct TensorSpec {
  std::string name;  // stored name, prefix included
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t nbytes() const;
};

// Called once per tensor with a sink that must receive exactly spec.nbytes() bytes in total.
using TensorFiller =
    std::function<void(const TensorSpec& spec, const std::function<void(const void*, std::size_t)>& write)>;

// Writes `tensors` (F32/F16/BF16/I32/I64) to `path`, data in list order. Throws ringlm::Error naming
// the file if it cannot be written or a filler produced the wrong number of bytes.
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorSpec>& tensors,
                       const TensorFiller& fill);

}  // namespace ringlm::io
