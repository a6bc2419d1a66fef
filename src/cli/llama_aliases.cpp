#include "cli/llama_aliases.h"

#include <utility>

namespace ringlm::cli {

namespace {

// llama.cpp spelling -> ringlm's long flag with the same meaning.
constexpr std::pair<const char*, const char*> kAliases[] = {
    {"-np", "--parallel"},       // concurrent sequences (serve's slots, extract's batch)
    {"-ngl", "--n-gpu-layers"},  // accepted and explained: ringlm runs on the CPU
    {"-hf", "--hf-repo"},        // a Hugging Face model, fetched if needed (cli/hf_model.h)
    {"-hfr", "--hf-repo"},
};

}  // namespace

std::vector<std::string> expand_llama_aliases(int argc, char** argv) {
  std::vector<std::string> out(argv, argv + argc);
  for (std::size_t i = 1; i < out.size(); ++i) {
    std::string& arg = out[i];
    if (arg == "--") break;
    for (const auto& [from, to] : kAliases) {
      const std::string f = from;
      if (arg == f || arg.rfind(f + "=", 0) == 0) {
        arg = to + arg.substr(f.size());
        break;
      }
    }
  }
  return out;
}

}  // namespace ringlm::cli
