// `ringlm inspect FILE`: what a checkpoint file holds — GGUF metadata (long arrays
// abbreviated) and the tensor table with type, shape, offset and size; for a checkpoint or
// `ringlm convert` directory, the tensors under their canonical names.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "io/gguf_gemma4.h"
#include "io/gguf_reader.h"
#include "io/mmproj.h"
#include "io/packed_towers.h"
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

// One tower's tensors (by name prefix) of `src`: parameter count, dtypes, and the table.
void print_tower_tensors(const ringlm::io::TensorSource& src, const char* p1, const char* p2) {
  std::vector<const ringlm::io::TensorView*> views;
  std::map<std::string, std::pair<int, std::int64_t>> by_dtype;  // dtype -> tensors, parameters
  std::int64_t params = 0;
  for (const auto& n : src.names())
    if (n.starts_with(p1) || n.starts_with(p2)) {
      const auto* v = src.find(n);
      views.push_back(v);
      params += v->numel();
      auto& d = by_dtype[ringlm::io::dtype_name(v->dtype)];
      ++d.first;
      d.second += v->numel();
    }
  std::string dtypes;
  for (const auto& [name, d] : by_dtype)
    dtypes += (dtypes.empty() ? "" : ", ") + name + " " + std::to_string(d.first) + " tensors / " +
              std::to_string(d.second) + " parameters";
  std::printf("  %lld parameters in %zu tensors (%s), from %s\n\n", static_cast<long long>(params), views.size(),
              dtypes.c_str(), src.describe().c_str());
  print_views(views);
}

// The vision/audio towers of a checkpoint directory, packed directory or mmproj file (bound
// and shape-checked exactly as `encode` binds them), or a plain statement that it has none.
void inspect_towers(const std::optional<ringlm::vision::VisionConfig>& vc,
                    const std::optional<ringlm::audio::AudioConfig>& ac, const ringlm::io::TensorSource* towers,
                    const std::string& no_vision, const std::string& no_audio) {
  if (!vc) {
    std::printf("\nvision tower: none (%s)\n", no_vision.c_str());
  } else {
    ringlm::vision::bind_vision_weights(*vc, *towers);
    std::string budgets;
    for (int b : ringlm::vision::kSoftTokenBudgets)
      budgets += (budgets.empty() ? "" : ", ") + std::to_string(b) + (b == vc->default_soft_tokens ? " (default)" : "");
    std::printf("\nvision tower: hidden %d, %d layers, %d heads (%d KV) of %d, MLP %d, patch %d, pooling %d, "
                "position table %d, clipped linears %s, standardize %s, -> text hidden %d; soft-token budgets per "
                "image %s\n",
                vc->hidden_size, vc->num_layers, vc->num_heads, vc->num_kv_heads, vc->head_dim, vc->intermediate_size,
                vc->patch_size, vc->pooling_kernel_size, vc->position_embedding_size,
                vc->use_clipped_linears ? "yes" : "no", vc->standardize ? "yes" : "no", vc->text_hidden_size,
                budgets.c_str());
    print_tower_tensors(*towers, "vision_tower.", "embed_vision.");
  }
  if (!ac) {
    std::printf("\naudio tower: none (%s)\n", no_audio.c_str());
  } else {
    ringlm::audio::bind_audio_weights(*ac, *towers);
    std::printf("\naudio tower: Conformer hidden %d, %d layers, %d heads, subsampling channels %d/%d, conv kernel %d, "
                "output %d -> text hidden %d; clipped linears %s; features %d mel bins at %d Hz, frame %d hop %d "
                "fft %d; soft tokens: one per 40 ms, at most %d per clip (%.0f s)\n",
                ac->hidden_size, ac->num_layers, ac->num_heads, ac->subsampling_channels[0], ac->subsampling_channels[1],
                ac->conv_kernel_size, ac->output_proj_dims, ac->text_hidden_size, ac->use_clipped_linears ? "yes" : "no",
                ac->feature_size, ac->sampling_rate, ac->frame_length, ac->hop_length, ac->fft_length,
                ac->audio_seq_length, ac->max_samples / static_cast<double>(ac->sampling_rate));
    print_tower_tensors(*towers, "audio_tower.", "embed_audio.");
  }
}

// A checkpoint or packed directory's towers.
void inspect_dir_towers(const std::filesystem::path& dir) {
  const auto vc = ringlm::vision::load_vision_config(dir);
  const auto ac = ringlm::audio::load_audio_config(dir);
  std::unique_ptr<ringlm::io::TensorSource> towers;
  if (vc || ac) {
    if (std::filesystem::exists(dir / ringlm::io::kPackedTowersFile)) {
      auto p = std::make_unique<ringlm::io::PackedTowerSource>(dir / ringlm::io::kPackedTowersFile);
      towers = std::move(p);
    } else {
      towers = std::make_unique<ringlm::io::SafetensorsSource>(dir, ringlm::io::TensorSet::Towers);
    }
  }
  std::optional<ringlm::audio::AudioConfig> a = ac;
  if (a && dynamic_cast<const ringlm::io::PackedTowerSource*>(towers.get()))
    a->checkpoint_dtype = static_cast<const ringlm::io::PackedTowerSource*>(towers.get())->checkpoint_dtype();
  inspect_towers(vc, a, towers.get(), "config.json has no vision_config: this checkpoint is text only",
                 "config.json has no audio_config: this checkpoint takes no audio");
}

// A packed directory's q4_0 rule (the index's q4_0_rule; version 1 files used ggml's alone)
// and convert's block counts (quantization.json) when present.
void print_q4_rule(const std::filesystem::path& dir) {
  std::printf("q4_0 rule: %s\n", ringlm::model::packed_q4_rule(dir).c_str());
  std::ifstream in(dir / ringlm::model::kQuantizationFile);
  if (!in) return;
  try {
    const auto q = nlohmann::json::parse(in);
    const double blocks = std::max(1.0, q.at("blocks").get<double>());
    std::printf("q4_0 blocks: %.0f; on an int4 lattice %.0f (%.2f %%), stored exactly %.0f (%.2f %%); %.0f rows with "
                "a power-of-two factor\n",
                q.at("blocks").get<double>(), q.at("lattice_blocks").get<double>(),
                100.0 * q.at("lattice_blocks").get<double>() / blocks, q.at("exact_blocks").get<double>(),
                100.0 * q.at("exact_blocks").get<double>() / blocks, q.at("rows_with_factor").get<double>());
  } catch (const nlohmann::json::exception& e) {
    std::printf("q4_0 blocks: %s unreadable (%s)\n", ringlm::model::kQuantizationFile, e.what());
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
    std::printf("%s: packed model directory (ringlm convert), %zu tensors\n", path.c_str(), views.size());
    print_q4_rule(p);
    std::printf("\n");
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
  if (std::filesystem::is_directory(p)) inspect_dir_towers(p);
}

void print_views(const std::vector<const ringlm::io::TensorView*>& views) {
  std::printf("  %-52s %-8s %-22s %14s  %s\n", "canonical name", "dtype", "shape", "bytes", "file");
  for (const auto* v : views) {
    std::string shape = "[";
    for (std::size_t k = 0; k < v->shape.size(); ++k) shape += (k ? ", " : "") + std::to_string(v->shape[k]);
    shape += "]";
    std::string dtype = ringlm::io::dtype_name(v->dtype);
    if (v->dtype == ringlm::io::DType::Q4_0 && v->packed) dtype += "p16";  // the kernels' layout (q4_packed.h)
    if (v->dtype == ringlm::io::DType::Q4_0 && v->packed && v->row_scales) dtype += "+f";  // with row factors
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
  sub->add_option("--max-elems", max_elems, "Array elements shown before abbreviating (default: 8)");
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
    const ringlm::io::GgufFile f(path);
    if (f.find("general.architecture") && f.get_string("general.architecture") == "clip") {
      const auto file = ringlm::io::open_mmproj(path);
      const ringlm::io::MmprojSource towers(file);
      inspect_towers(ringlm::vision::vision_config_from_mmproj(*file), ringlm::audio::audio_config_from_mmproj(*file),
                     &towers, "this mmproj has no gemma4v projector: it takes no images",
                     "this mmproj has no gemma4a projector: it takes no audio");
    } else {
      std::printf("\nvision/audio towers: none in this file (a GGUF text model; llama.cpp keeps the towers in a "
                  "separate mmproj file: pass it with --mmproj FILE)\n");
    }
  });
}
