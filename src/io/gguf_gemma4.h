// The `gemma4` architecture as llama.cpp's converter writes it into GGUF: tensor names
// mapped to the canonical Hugging Face names the model loader binds, ggml shapes {in, out}
// reversed to PyTorch's [out, in], and the model configuration rebuilt from `gemma4.*`
// metadata in Hugging Face `text_config` form.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/gguf_reader.h"
#include "io/tensor.h"

namespace ringlm::io {

// llama.cpp name -> canonical name ("blk.3.attn_q.weight" -> "layers.3.self_attn.q_proj.weight"),
// or nullopt for a name the gemma4 architecture does not have. `rope_freqs.weight` has no
// Hugging Face counterpart and keeps its name.
std::optional<std::string> gemma4_canonical_name(std::string_view gguf_name);
// The inverse, for writing GGUF files.
std::optional<std::string> gemma4_gguf_name(std::string_view canonical_name);

class GgufTensorSource : public TensorSource {
 public:
  // Requires general.architecture == "gemma4" and only tensor types ringlm computes with;
  // throws ringlm::Error naming the file and tensor otherwise.
  explicit GgufTensorSource(std::shared_ptr<const GgufFile> file);
  static std::unique_ptr<GgufTensorSource> open(const std::filesystem::path& path);

  const TensorView* find(std::string_view name) const override;
  std::vector<std::string> names() const override;
  std::string describe() const override;
  bool drop_pages(const void* p, std::size_t n) const override { return file_->mapping().drop_pages(p, n); }

  const GgufFile& file() const { return *file_; }
  // GGUF tensors that have no canonical name (ignored by the loader).
  const std::vector<std::string>& unmapped() const { return unmapped_; }

 private:
  std::shared_ptr<const GgufFile> file_;
  std::vector<TensorView> views_;
  std::vector<std::string> gguf_names_;  // parallel to views_
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<std::string> unmapped_;
};

// The model configuration of a gemma4 GGUF file as a Hugging Face Gemma4TextConfig JSON
// object (the `text_config` of config.json). Throws ringlm::Error naming the file and key
// for missing or inconsistent metadata.
nlohmann::json gemma4_text_config(const GgufFile& file);

class GgufWriter;
// The inverse for writing: the `gemma4.*` metadata llama.cpp's converter writes for this
// text config (general.architecture included), and the rope_freqs tensor values that
// encode its partial rotary factor (empty if the full layers rotate completely).
void gemma4_write_metadata(GgufWriter& w, const nlohmann::json& text_config);
std::vector<float> gemma4_rope_freqs(const nlohmann::json& text_config);

}  // namespace ringlm::io
