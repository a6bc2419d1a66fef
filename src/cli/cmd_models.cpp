// `ringlm models`: the models this machine has, from the Hugging Face cache and --models-dir,
// with the name to give --model.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/model_locator.h"

namespace {

struct ModelsOptions {
  std::string models_dir;
};

void list(const ModelsOptions& o) {
  const auto models = ringlm::cli::list_models(o.models_dir);
  if (models.empty()) {
    std::fprintf(stderr, "ringlm models: none found in %s%s%s\n", ringlm::cli::hf_hub_cache().c_str(),
                 o.models_dir.empty() ? "" : " or ", o.models_dir.c_str());
    return;
  }
  std::printf("%-40s %-9s %10s  %s\n", "MODEL (--model)", "KIND", "WEIGHTS", "PATH");
  for (const auto& m : models) {
    const std::string name = m.kind == "hf-cache" ? m.name : m.path.string();
    std::printf("%-40s %-9s %8.2f GB  %s\n", name.c_str(), m.kind.c_str(), static_cast<double>(m.bytes) / 1e9,
                m.path.c_str());
  }
}

}  // namespace

RINGLM_COMMAND(models) {
  auto opts = std::make_shared<ModelsOptions>();
  auto* sub = app.add_subcommand("models", "List the models in the Hugging Face cache (HF_HOME) and in --models-dir");
  sub->footer("Example:\n  ringlm models --models-dir /work/models");
  sub->add_option("--models-dir", opts->models_dir, "Also list model directories and .gguf files in this directory");
  sub->callback([opts] { list(*opts); });
}
