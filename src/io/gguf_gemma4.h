// The `gemma4` architecture as llama.cpp's converter writes it into GGUF: tensors under the
// canonical Hugging Face names the model loader binds (through a name map: the names
// themselves are in model/tensor_manifest.h), ggml shapes {in, out} reversed to PyTorch's
// [out, in], and the model configuration rebuilt from `gemma4.*` metadata in Hugging Face
// `text_config` form.
#pragma once

#include <filesystem>
#include <functional>
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

// A GGUF tensor name -> the name the loader binds, or nullopt for a tensor to leave out.
// The gemma4 names are the model's (model/tensor_manifest.h: model::gemma4_canonical_name);
// io sits below model, so it takes them as an argument.
using GgufNameMap = std::function<std::optional<std::string>(std::string_view)>;

class GgufTensorSource : public TensorSource {
 public:
  // Requires general.architecture == arch ("gemma4", or "gemma4-assistant" for the drafter,
  // model/assistant_gguf.h) and only tensor types ringlm computes with; throws ringlm::Error
  // naming the file and tensor otherwise. integer_tables also admits I32 / I64 tensors (the
  // assistant's token ordering; never a matrix). Tensors are found under canonical_name(GGUF
  // name); those it maps to nullopt are listed in unmapped().
  GgufTensorSource(std::shared_ptr<const GgufFile> file, const GgufNameMap& canonical_name,
                   std::string_view arch = "gemma4", bool integer_tables = false);
  static std::unique_ptr<GgufTensorSource> open(const std::filesystem::path& path, const GgufNameMap& canonical_name,
                                                std::string_view arch = "gemma4", bool integer_tables = false);

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
// for missing or inconsistent metadata. `arch` is general.architecture and the key prefix;
// under "gemma4-assistant" every layer may be KV-shared (the drafter reads the target's KV).
nlohmann::json gemma4_text_config(const GgufFile& file, std::string_view arch = "gemma4");

class GgufWriter;
// The inverse for writing: the `gemma4.*` metadata llama.cpp's converter writes for this
// text config (general.architecture included), and the rope_freqs tensor values that
// encode its partial rotary factor (empty if the full layers rotate completely).
void gemma4_write_metadata(GgufWriter& w, const nlohmann::json& text_config, std::string_view arch = "gemma4");
std::vector<float> gemma4_rope_freqs(const nlohmann::json& text_config);

}  // namespace ringlm::io
