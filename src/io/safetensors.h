// Safetensors checkpoints (Hugging Face layout), read through memory mappings.
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of JSON mapping
// tensor names to {dtype, shape, data_offsets}, then the tensor bytes. The file is hostile
// input: the header is parsed from a bounded copy, every offset is checked against the file
// size, the byte count must match dtype x shape, and data ranges may not overlap.
//
// open_safetensors_dir() presents a checkpoint directory (model.safetensors, or shards
// listed by model.safetensors.index.json) as one io::TensorSource with canonical names:
// the prefix "model.language_model." (multimodal checkpoints) or "model." (text-only) is
// stripped, and the vision/audio towers are skipped. With TensorSet::Towers the same files
// present only the towers and their embedders, named without "model." ("vision_tower.…",
// "embed_vision.…", "audio_tower.…", "embed_audio.…"), for src/vision and src/audio.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/mapped_file.h"
#include "io/tensor.h"

namespace ringlm::io {

// Largest JSON header we accept (the real E4B multimodal header is a few hundred KB).
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 64ull << 20;

// Which tensors of a checkpoint a reader presents.
enum class TensorSet { Text, Towers };

// Canonical tensor name for a stored one, or "" if the tensor belongs to a part of the
// checkpoint ringlm does not use (vision and audio towers and their embedders).
std::string canonical_tensor_name(const std::string& stored_name);
// The tower name of a stored one ("model.vision_tower.x" -> "vision_tower.x"), or "" when
// the tensor is not part of a vision/audio tower or embedder.
std::string tower_tensor_name(const std::string& stored_name);

// One mapped .safetensors file with its validated tensor table (canonical names).
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path, TensorSet set = TensorSet::Text);
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const std::string& path() const { return file_.path(); }
  const MappedFile& mapping() const { return file_; }

 private:
  MappedFile file_;
  std::vector<TensorView> tensors_;
};

class SafetensorsSource : public TensorSource {
 public:
  // `dir` holds model.safetensors, or model.safetensors.index.json plus its shards.
  explicit SafetensorsSource(const std::filesystem::path& dir, TensorSet set = TensorSet::Text);
  const TensorView* find(std::string_view name) const override;
  std::vector<std::string> names() const override;
  std::string describe() const override { return dir_; }
  bool drop_pages(const void* p, std::size_t n) const override {
    for (const auto& f : files_)
      if (f->mapping().drop_pages(p, n)) return true;
    return false;
  }

 private:
  void add_file(const std::filesystem::path& path);
  std::string dir_;
  TensorSet set_ = TensorSet::Text;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*, std::less<>> by_name_;
};

std::unique_ptr<TensorSource> open_safetensors_dir(const std::filesystem::path& dir);

}  // namespace ringlm::io
