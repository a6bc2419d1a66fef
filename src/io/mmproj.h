// llama.cpp's multimodal projector file (`mmproj` GGUF, general.architecture "clip") for
// Gemma 4's towers (projector types gemma4v and gemma4a), presented as a TensorSource
// under the tower names src/vision and src/audio bind ("vision_tower.…", "embed_vision.…",
// "audio_tower.…", "embed_audio.…"), and the inverse name and layout map for writing one.
//
// What llama.cpp's converter does to Gemma 4's tensors, undone here on reading:
//   - names: v.blk.N.attn_q.weight, a.blk.N.conv_pw1.weight, mm.input_projection.weight, ...
//     (mmproj_gguf_name() lists them all); the clip bounds become 1-element tensors
//     `<linear>.input_min` etc. next to `<linear>.weight`;
//   - the patch embedding [H, p*p*3] (row, col, channel inside a patch) is stored as a
//     conv2d kernel [H, 3, p, p]: permuted back into an owned float32 copy;
//   - the audio per_dim_scale is stored as softplus(per_dim_scale): inverted (in float64)
//     into an owned float32 copy, so the encoder applies softplus as for the checkpoint;
//   - the audio depthwise conv kernel [H, 1, K] is stored as [H, K]: only the shape changes.
// ggml shapes {ne0, ne1, ...} are reversed to PyTorch order. Any other tensor under v., a.
// or mm. is refused (a tower with a part ringlm does not compute must not load silently).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/gguf_reader.h"
#include "io/tensor.h"

namespace ringlm::io {

// The GGUF name llama.cpp's converter gives a tower tensor ("vision_tower.encoder.layers.3.
// self_attn.q_proj.linear.weight" -> "v.blk.3.attn_q.weight"), or nullopt for a name that is
// not one of Gemma 4's tower tensors.
std::optional<std::string> mmproj_gguf_name(std::string_view tower_name);
// The inverse: a GGUF name -> the tower name, or nullopt.
std::optional<std::string> mmproj_tower_name(std::string_view gguf_name);

// Opens `path` as a Gemma 4 mmproj: GGUF with general.architecture "clip" and a
// clip.vision.projector_type "gemma4v" and/or clip.audio.projector_type "gemma4a" (or
// clip.projector_type one of them). Throws ringlm::Error naming the file and the key.
std::shared_ptr<const GgufFile> open_mmproj(const std::filesystem::path& path);
// The projector type of each tower in the file, "" when it has none.
std::string mmproj_projector(const GgufFile& file, std::string_view modality);  // "vision" or "audio"

class MmprojSource : public TensorSource {
 public:
  // Every v./a./mm. tensor of the file, mapped and checked (types ringlm computes with,
  // shapes of the re-laid tensors); throws ringlm::Error naming the file and tensor.
  explicit MmprojSource(std::shared_ptr<const GgufFile> file);
  const TensorView* find(std::string_view name) const override;
  std::vector<std::string> names() const override;
  std::string describe() const override { return file_->path(); }
  bool drop_pages(const void* p, std::size_t n) const override { return file_->mapping().drop_pages(p, n); }
  const GgufFile& file() const { return *file_; }

 private:
  std::shared_ptr<const GgufFile> file_;
  std::vector<TensorView> views_;
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<std::unique_ptr<std::vector<float>>> owned_;  // re-laid tensors
};

// Float64 softplus and its inverse (the per_dim_scale transform), shared with the writer.
// An integer metadata key of an mmproj file within [lo, hi], or `fallback` when the key is absent
// (fallback < lo: the key is required). Errors name the file and the key.
int mmproj_int(const GgufFile& file, const std::string& key, int fallback, int lo, int hi);
// ne[axis] of a tensor a tower needs, within [lo, hi]; errors name the file and the tensor.
std::int64_t mmproj_dim(const GgufFile& file, const std::string& tensor, std::size_t axis,
                        std::int64_t lo = INT64_MIN, std::int64_t hi = INT64_MAX);

double mmproj_softplus(double x);
double mmproj_softplus_inverse(double y);

}  // namespace ringlm::io
