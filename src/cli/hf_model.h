// `-hf ORG/NAME[:QUANT]` (alias --hf-repo, llama.cpp's spelling): a Hugging Face model named
// on any command that reads one, fetched into the local HF cache with `ringlm pull`'s machinery
// (hf_pull.h: resumable, checksum-verified) unless the cache already holds it, then loaded
// from there.
//
// Which files: a repository with .gguf files (other than mmproj*.gguf) is a GGUF repository:
// `:QUANT` picks the one whose name carries that quantization as a whole word (case-insensitive:
// `:q4_k_m` finds `model-Q4_K_M.gguf`, `:Q4_K` does not); without a tag, Q4_K_M if the
// repository has it, else its only .gguf, else an error listing the choices. Its mmproj*.gguf
// (vision/audio towers; F16 preferred when there are several) comes along and is used unless
// --mmproj is given. Any other repository (config.json + safetensors) is fetched whole, as
// `ringlm pull` does.
//
// The cache is looked at first and the Hub is not asked when it can answer (the file for the
// tag, or a complete snapshot); HF_HUB_OFFLINE=1 never asks it.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/hf_pull.h"

namespace ringlm::cli {

struct HfSpec {
  std::string repo;   // ORG/NAME
  std::string quant;  // "" = no tag
};

// Parses ORG/NAME[:QUANT]; throws ringlm::Error naming the flag when it is not that shape.
HfSpec parse_hf_spec(const std::string& spec);

// The GGUF files of `files` (repository paths) chosen for `quant`: [0] the model file, [1] the
// mmproj file if any. Empty when the repository has no model .gguf. Throws ringlm::Error listing
// the choices when the tag matches none or several, or no tag picks one.
std::vector<std::string> choose_gguf_files(const std::string& repo, const std::vector<std::string>& files,
                                           const std::string& quant);

// A glob (PullOptions::include) matching exactly the repository path `name`.
std::string literal_glob(const std::string& name);

struct HfModel {
  std::filesystem::path model;   // a snapshot directory or a .gguf file in it
  std::filesystem::path mmproj;  // the repository's mmproj file, or empty
};

// The model `spec` names, fetched first if the cache cannot answer.
HfModel resolve_hf_model(const std::string& spec);

// PullOptions for `repo` from the environment: HF_ENDPOINT (else https://huggingface.co),
// HF_TOKEN (else $HF_HOME/token), the cache directory.
PullOptions pull_options_from_env(const std::string& repo);

// Adds --hf-repo (-hf once llama_aliases.h rewrote it) to `sub`, excluding `model_option`
// (both given: a usage error, exit 2).
CLI::Option* add_hf_option(CLI::App* sub, std::string& spec, CLI::Option* model_option);

}  // namespace ringlm::cli
