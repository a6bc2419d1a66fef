// `ringlm pull ORG/NAME[:QUANT]`: a Hugging Face model into the local HF cache (hf_pull.h),
// after which `--model ORG/NAME` (or `-hf ORG/NAME[:QUANT]`) finds it. With :QUANT, only that
// GGUF file (and the repository's mmproj file), chosen as -hf chooses (hf_model.h).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/hf_model.h"
#include "cli/hf_pull.h"
#include "util/error.h"

RINGLM_COMMAND(pull) {
  auto opts = std::make_shared<ringlm::cli::PullOptions>();
  auto* sub = app.add_subcommand("pull", "Download a Hugging Face model into the local HF cache (resumable, checksum-verified)");
  sub->footer("Example:\n  ringlm pull google/gemma-4-e2b-it && ringlm run -m google/gemma-4-e2b-it -p hi\n"
              "  ringlm pull ORG/NAME-GGUF:Q4_K_M   (one quantization of a GGUF repository)\n"
              "Environment: HF_ENDPOINT (default https://huggingface.co), HF_TOKEN (gated repositories), HF_HOME / "
              "HF_HUB_CACHE (where the cache is)");
  sub->add_option("repo", opts->repo, "Repository id, ORG/NAME, or ORG/NAME:QUANT for one GGUF file")->required();
  sub->add_option("--revision", opts->revision, "Branch, tag or commit (default: main)");
  sub->add_option("--include", opts->include, "Only files matching this glob, e.g. '*.json' (repeatable; default: all files)");
  sub->add_option("--endpoint", opts->endpoint, "Hub URL (default: $HF_ENDPOINT, else https://huggingface.co)");
  sub->add_option("--retries", opts->retries, "Resumed attempts per file after a dropped connection (default: 5)")
      ->check(CLI::Range(0, 100));
  sub->callback([opts] {
    using namespace ringlm::cli;
    const std::string spec = opts->repo;
    if (spec.find('/') == std::string::npos) ringlm::fail("pull: '", spec, "' is not a repository id (ORG/NAME)");
    const HfSpec hf = parse_hf_spec(spec);
    PullOptions o = pull_options_from_env(hf.repo);
    o.revision = opts->revision;
    o.include = opts->include;
    o.retries = opts->retries;
    if (!opts->endpoint.empty()) o.endpoint = opts->endpoint;
    while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
    if (!hf.quant.empty()) {
      if (!o.include.empty()) ringlm::fail("pull: give either ", spec, " or --include, not both");
      std::string commit;
      const auto ggufs = choose_gguf_files(hf.repo, list_repo_files(o, commit), hf.quant);
      if (ggufs.empty()) ringlm::fail("pull: ", hf.repo, " has no .gguf files, so there is no quantization to pick (drop :", hf.quant, ")");
      for (const auto& g : ggufs) o.include.push_back(literal_glob(g));
    }
    const auto snapshot = pull_model(o);
    std::printf("%s\n", snapshot.c_str());
    std::fprintf(stderr, "ringlm pull: done; use it with --model %s or -hf %s\n", hf.repo.c_str(), spec.c_str());
  });
}
