// The vision/audio towers of ringlm's packed model directory: DIR/towers.rlpk, written by
// `ringlm convert` next to weights.rlpk, in the same container (docs/convert.md):
//
//   bytes 0-7   magic "RLMPACK\0"      bytes 8-11  u32 version (1)     bytes 12-15 u32 0
//   bytes 16-23 u64 N, the length of the JSON index that follows
//   the index: {"format":"ringlm-towers","version":1,"alignment":64,"checkpoint_dtype":"BF16",
//               "tensors":[{"name":...,"dtype":"F16","shape":[...],"offset":...,"bytes":...},...]}
//   zero padding to data_start = 24 + N rounded up to 64; each tensor at data_start + offset
//   (offset a multiple of 64).
//
// Tensors keep the tower names src/vision and src/audio bind and their PyTorch shapes and
// layouts (nothing is re-laid, unlike an mmproj GGUF); dtypes F32, F16, BF16 or Q8_0 (plain
// ggml blocks along the last dimension). The file is hostile input: every field is checked
// before use and errors name the file, the tensor and the field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/mapped_file.h"
#include "io/tensor.h"

namespace ringlm::io {

inline constexpr char kPackedTowersFile[] = "towers.rlpk";
inline constexpr std::uint64_t kMaxTowerIndexBytes = 16ull << 20;

// Bytes of a tower tensor of `dtype` and `shape`, or nullopt when the shape does not fit the
// dtype (Q8_0 needs a last dimension that is a multiple of 32).
std::optional<std::uint64_t> tower_tensor_bytes(DType dtype, const std::vector<std::int64_t>& shape);

class PackedTowerSource : public TensorSource {
 public:
  explicit PackedTowerSource(const std::filesystem::path& path);
  const TensorView* find(std::string_view name) const override;
  std::vector<std::string> names() const override;
  std::string describe() const override { return file_.path(); }
  bool drop_pages(const void* p, std::size_t n) const override { return file_.drop_pages(p, n); }
  // The original checkpoint's dtype (what transformers' activation clamps depend on).
  std::optional<DType> checkpoint_dtype() const { return checkpoint_dtype_; }

 private:
  MappedFile file_;
  std::vector<TensorView> views_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::optional<DType> checkpoint_dtype_;
};

struct TowerTensorOut {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  // Writes exactly tower_tensor_bytes(dtype, shape) bytes into dst.
  std::function<void(std::uint8_t* dst)> fill;
};

// Writes `path` (through a temporary file, renamed when complete).
void write_packed_towers(const std::filesystem::path& path, const std::vector<TowerTensorOut>& tensors,
                         DType checkpoint_dtype);

}  // namespace ringlm::io
