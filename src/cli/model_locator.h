// Where a --model argument points: a path as given, or a Hugging Face repo id
// ("google/gemma-4-e2b-it") found in the local Hugging Face cache ($HF_HUB_CACHE, else
// $HF_HOME/hub, else ~/.cache/huggingface/hub). Nothing is downloaded. Also the listing behind
// `ringlm models`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ringlm::cli {

// The Hugging Face hub cache directory this process would read.
std::filesystem::path hf_hub_cache();

// `model` as a path if it exists; else, if it looks like owner/name, that repo's snapshot in
// the HF cache (the revision refs/main names, or the newest snapshot). Throws ringlm::Error
// saying where it looked.
std::filesystem::path resolve_model(const std::string& model);

struct ModelEntry {
  std::string name;            // repo id for the HF cache, file or directory name otherwise
  std::filesystem::path path;  // what --model should be given (or resolves to)
  std::string kind;            // "hf-cache", "dir" or "gguf"
  std::uintmax_t bytes = 0;    // size of the weights (safetensors / gguf / packed files)
};

// Models in the HF cache (repos with a snapshot holding config.json or a .gguf), and in
// `models_dir` if given (subdirectories with config.json, and .gguf files).
std::vector<ModelEntry> list_models(const std::filesystem::path& models_dir);

}  // namespace ringlm::cli
