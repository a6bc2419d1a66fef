// `ringlm inspect FILE`: what a checkpoint file holds — GGUF metadata (long arrays
// abbreviated) and the tensor table with type, shape, offset and size; for a checkpoint or
// `ringlm convert` directory, the tensors under their canonical names.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/command.h"
#include "io/gguf_gemma4.h"
#include "io/gguf_reader.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/packed_format.h"
#include "model/packed_source.h"
#include "model/tensor_manifest.h"
#include "util/error.h"
#include "audio/audio_config.h"
#include "audio/audio_weights.h"
#include "vision/vision_config.h"
#include "vision/vision_weights.h"

namespace {

std::string shape_string(const std::vector<std::int64_t>& ne) {
  std::string s = "{";
  for (std::size_t k = 0; k < ne.size(); ++k) s += (k ? ", " : "") + std::to_string(ne[k]);
  return s + "}";
}

void inspect_gguf(const std::string& path, std::size_t max_elems) {
  const ringlm::io::GgufFile f(path);
  std::printf("%s: GGUF v%u, %zu bytes, alignment %llu, data section at byte %llu\n", path.c_str(),
              f.version(), f.size(), static_cast<unsigned long long>(f.alignment()),
              static_cast<unsigned long long>(f.data_offset()));
  std::printf("\nmetadata (%zu entries):\n", f.metadata().size());
  for (const auto& kv : f.metadata()) {
    std::string type = ringlm::io::gguf_value_type_name(kv.value.type);
    if (kv.value.type == ringlm::io::GgufValueType::ARRAY)
      type += std::string("<") + ringlm::io::gguf_value_type_name(kv.value.arr.elem_type) + ">";
    std::printf("  %-48s %-14s %s\n", kv.key.c_str(), type.c_str(), kv.value.to_string(max_elems).c_str());
  }
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  std::printf("  %-40s %-7s %-22s %14s %14s  %s\n", "name", "type", "ne (ggml order)", "offset", "bytes",
              "canonical name");
  for (const auto& t : f.tensors()) {
    const auto canonical = ringlm::model::gemma4_canonical_name(t.name);
    std::printf("  %-40s %-7s %-22s %14llu %14llu  %s\n", t.name.c_str(), t.type_info().name,
                shape_string(t.ne).c_str(), static_cast<unsigned long long>(t.file_offset),
                static_cast<unsigned long long>(t.nbytes), canonical ? canonical->c_str() : "-");
  }
}

void print_views(const std::vector<const ringlm::io::TensorView*>& views);

// The vision/audio towers of a Hugging Face checkpoint directory, or a plain statement that
// it has none. The vision tensors are bound (shape-checked) exactly as `encode` binds them.
void inspect_towers(const std::filesystem::path& dir) {
  const auto vc = ringlm::vision::load_vision_config(dir);
  if (!vc) {
    std::printf("\nvision tower: none (config.json has no vision_config: this checkpoint is text only)\n");
  } else {
    const ringlm::io::SafetensorsSource towers(dir, ringlm::io::TensorSet::Towers);
    ringlm::vision::bind_vision_weights(*vc, towers);
    std::vector<const ringlm::io::TensorView*> views;
    for (const auto& n : towers.names())
      if (n.starts_with("vision_tower.") || n.starts_with("embed_vision.")) views.push_back(towers.find(n));
    std::printf("\nvision tower: hidden %d, %d layers, %d heads (%d KV) of %d, MLP %d, patch %d, pooling %d, "
                "position table %d, clipped linears %s, standardize %s, -> text hidden %d; default budget %d "
                "soft tokens; %zu tensors\n\n",
                vc->hidden_size, vc->num_layers, vc->num_heads, vc->num_kv_heads, vc->head_dim, vc->intermediate_size,
                vc->patch_size, vc->pooling_kernel_size, vc->position_embedding_size,
                vc->use_clipped_linears ? "yes" : "no", vc->standardize ? "yes" : "no", vc->text_hidden_size,
                vc->default_soft_tokens, views.size());
    print_views(views);
  }
  const auto ac = ringlm::audio::load_audio_config(dir);
  if (!ac) {
    std::printf("\naudio tower: none (config.json has no audio_config: this checkpoint takes no audio)\n");
  } else {
    const ringlm::io::SafetensorsSource towers(dir, ringlm::io::TensorSet::Towers);
    ringlm::audio::bind_audio_weights(*ac, towers);
    std::vector<const ringlm::io::TensorView*> views;
    for (const auto& n : towers.names())
      if (n.starts_with("audio_tower.") || n.starts_with("embed_audio.")) views.push_back(towers.find(n));
    std::printf("\naudio tower: Conformer hidden %d, %d layers, %d heads, subsampling channels %d/%d, conv kernel %d, "
                "output %d -> text hidden %d; clipped linears %s; features %d mel bins at %d Hz, frame %d hop %d "
                "fft %d; at most %d soft tokens per clip; %zu tensors\n\n",
                ac->hidden_size, ac->num_layers, ac->num_heads, ac->subsampling_channels[0], ac->subsampling_channels[1],
                ac->conv_kernel_size, ac->output_proj_dims, ac->text_hidden_size, ac->use_clipped_linears ? "yes" : "no",
                ac->feature_size, ac->sampling_rate, ac->frame_length, ac->hop_length, ac->fft_length,
                ac->audio_seq_length, views.size());
    print_views(views);
  }
}

// Safetensors file, checkpoint directory or packed (`ringlm convert`) directory: the
// tensors under their canonical names.
void inspect_safetensors(const std::string& path) {
  std::filesystem::path p(path);
  std::unique_ptr<ringlm::io::TensorSource> dir_source;
  std::unique_ptr<ringlm::io::SafetensorsFile> file;
  std::vector<const ringlm::io::TensorView*> views;
  if (ringlm::model::is_packed_model_dir(p)) {
    // The same checks as loading (sizes against config.json and meta.json), nothing copied.
    dir_source = ringlm::model::open_packed_dir(p, ringlm::model::load_model_config(p));
    for (const auto& n : dir_source->names()) views.push_back(dir_source->find(n));
    std::printf("%s: packed model directory (ringlm convert), %zu tensors\n\n", path.c_str(), views.size());
  } else if (std::filesystem::is_directory(p)) {
    dir_source = ringlm::io::open_safetensors_dir(p);
    for (const auto& n : dir_source->names()) views.push_back(dir_source->find(n));
    std::printf("%s: checkpoint directory, %zu text tensors\n\n", path.c_str(), views.size());
  } else {
    file = std::make_unique<ringlm::io::SafetensorsFile>(p);
    for (const auto& t : file->tensors()) views.push_back(&t);
    std::printf("%s: safetensors, %zu tensors used by ringlm\n\n", path.c_str(), views.size());
  }
  print_views(views);
  if (!ringlm::model::is_packed_model_dir(p) && std::filesystem::is_directory(p)) inspect_towers(p);
}

void print_views(const std::vector<const ringlm::io::TensorView*>& views) {
  std::printf("  %-52s %-8s %-22s %14s  %s\n", "canonical name", "dtype", "shape", "bytes", "file");
  for (const auto* v : views) {
    std::string shape = "[";
    for (std::size_t k = 0; k < v->shape.size(); ++k) shape += (k ? ", " : "") + std::to_string(v->shape[k]);
    shape += "]";
    std::string dtype = ringlm::io::dtype_name(v->dtype);
    if (v->dtype == ringlm::io::DType::Q4_0 && v->packed) dtype += "p16";  // the kernels' layout (q4_packed.h)
    std::printf("  %-52s %-8s %-22s %14llu  %s\n", v->name.c_str(), dtype.c_str(), shape.c_str(),
                static_cast<unsigned long long>(v->nbytes), std::filesystem::path(v->file).filename().c_str());
  }
}

}  // namespace

RINGLM_COMMAND(inspect) {
  auto* sub = app.add_subcommand("inspect", "Print the metadata and tensor table of a GGUF file (or the tensors of a safetensors file, checkpoint directory or ringlm convert directory)");
  sub->footer("Example:\n  ringlm inspect /models/e2b.gguf");
  static std::string path;
  static std::size_t max_elems = 8;
  static bool config = false;
  sub->add_option("file", path, "GGUF file, .safetensors file, checkpoint directory or packed model directory")->required();
  sub->add_option("--max-elems", max_elems, "Array elements shown before abbreviating (default 8)");
  sub->add_flag("--config", config, "Print only the model config derived from gemma4 metadata (HF text_config JSON)");
  sub->callback([] {
    if (!std::filesystem::exists(path)) ringlm::fail(path, ": no such file or directory");
    if (!ringlm::io::is_gguf_file(path)) {
      if (config) ringlm::fail(path, ": --config needs a GGUF file");
      if (std::filesystem::is_directory(path) || path.ends_with(".safetensors")) return inspect_safetensors(path);
      ringlm::fail(path, ": not a GGUF file (ringlm inspect reads GGUF files, .safetensors files, checkpoint directories and ringlm convert directories)");
    }
    if (config) {
      const ringlm::io::GgufFile f(path);
      std::printf("%s\n", ringlm::io::gemma4_text_config(f).dump(2).c_str());
      return;
    }
    inspect_gguf(path, max_elems);
  });
}
