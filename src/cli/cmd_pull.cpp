// `ringlm pull ORG/NAME`: a Hugging Face model into the local HF cache (hf_pull.h), after
// which `--model ORG/NAME` finds it.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "cli/command.h"
#include "cli/hf_pull.h"
#include "cli/model_locator.h"
#include "util/error.h"

namespace {

// HF_TOKEN, else the token file huggingface-cli login writes ($HF_HOME/token).
std::string hub_token() {
  if (const char* t = std::getenv("HF_TOKEN"); t && *t) return t;
  std::string home;
  if (const char* h = std::getenv("HF_HOME"); h && *h) home = h;
  else if (const char* u = std::getenv("HOME"); u && *u) home = std::string(u) + "/.cache/huggingface";
  std::ifstream in(home + "/token");
  std::string token;
  std::getline(in, token);
  return token;
}

}  // namespace

RINGLM_COMMAND(pull) {
  auto opts = std::make_shared<ringlm::cli::PullOptions>();
  auto* sub = app.add_subcommand("pull", "Download a Hugging Face model into the local HF cache (resumable, checksum-verified)");
  sub->footer("Example:\n  ringlm pull google/gemma-4-e2b-it && ringlm run -m google/gemma-4-e2b-it -p hi\n"
              "Environment: HF_ENDPOINT (default https://huggingface.co), HF_TOKEN (gated repositories), HF_HOME / "
              "HF_HUB_CACHE (where the cache is)");
  sub->add_option("repo", opts->repo, "Repository id, ORG/NAME")->required();
  sub->add_option("--revision", opts->revision, "Branch, tag or commit (default: main)");
  sub->add_option("--include", opts->include, "Only files matching this glob, e.g. '*.json' (repeatable; default: all files)");
  sub->add_option("--endpoint", opts->endpoint, "Hub URL (default: $HF_ENDPOINT, else https://huggingface.co)");
  sub->add_option("--retries", opts->retries, "Resumed attempts per file after a dropped connection (default: 5)")
      ->check(CLI::Range(0, 100));
  sub->callback([opts] {
    auto o = *opts;
    if (o.repo.find('/') == std::string::npos) ringlm::fail("pull: '", o.repo, "' is not a repository id (ORG/NAME)");
    if (o.endpoint.empty()) {
      const char* env = std::getenv("HF_ENDPOINT");
      o.endpoint = env && *env ? env : "https://huggingface.co";
    }
    while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
    o.token = hub_token();
    o.cache = ringlm::cli::hf_hub_cache();
    const auto snapshot = ringlm::cli::pull_model(o);
    std::printf("%s\n", snapshot.c_str());
    std::fprintf(stderr, "ringlm pull: done; use it with --model %s\n", o.repo.c_str());
  });
}
