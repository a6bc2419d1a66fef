// ringlm command-line entry point: collects the registered subcommands and runs one.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/compute_device.h"
#include "cli/environment.h"
#include "cli/progress_display.h"
#include "cli/help.h"
#include "cli/llama_aliases.h"
#include "util/error.h"

namespace ringlm::cli {

static std::vector<std::pair<std::string, CommandSetup>>& registry() {
  static std::vector<std::pair<std::string, CommandSetup>> commands;
  return commands;
}

CommandRegistration::CommandRegistration(const char* name, CommandSetup setup) {
  registry().emplace_back(name, setup);
}

std::vector<std::pair<std::string, CommandSetup>> registered_commands() {
  auto commands = registry();
  std::sort(commands.begin(), commands.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return commands;
}

}  // namespace ringlm::cli

int main(int raw_argc, char** raw_argv) {
  // llama.cpp's -np / -ngl become --parallel / --n-gpu-layers (CLI11 names one-letter shorts only).
  std::vector<std::string> args = ringlm::cli::expand_llama_aliases(raw_argc, raw_argv);
  std::vector<char*> arg_ptrs;
  for (auto& a : args) arg_ptrs.push_back(a.data());
  const int argc = raw_argc;
  char** argv = arg_ptrs.data();
  CLI::App app{"ringlm: a native runtime for Gemma 4 on-device models"};
  app.require_subcommand(1);
  // Wide enough that the llama.cpp aliases ("-n,--max-tokens,--n-predict INT") keep their
  // description, and so their default, on the same line.
  app.get_formatter()->column_width(40);
  app.set_version_flag("--version", ringlm::cli::vulkan_compiled_in()
                                        ? "ringlm " RINGLM_VERSION " (Vulkan backend: compiled in)"
                                        : "ringlm " RINGLM_VERSION " (Vulkan backend: not compiled in)");
  for (auto& [name, setup] : ringlm::cli::registered_commands()) setup(app);
  ringlm::cli::show_defaults(app);
  ringlm::cli::show_progress(/*quiet_below_s=*/1.0);  // e.g. quantizing a large checkpoint at load
  try {
    ringlm::cli::apply_process_environment();  // RINGLM_ISA, RINGLM_THREADS
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    if (code == 0) return 0;  // --help, --version
    // Unexpected arguments (a mistyped flag or command): say what was probably meant.
    std::fputs(ringlm::cli::suggest(app, app.remaining(true), argc, argv).c_str(), stderr);
    return 2;  // a usage error, as in other command-line tools (CLI11's own codes are 100+)
  } catch (const ringlm::cli::ExitStatus& e) {
    return e.code;
  } catch (const ringlm::Error& e) {
    const bool bug = e.kind() == ringlm::ErrorKind::internal;
    std::fprintf(stderr, "ringlm: %s: %s\n", bug ? "internal error" : "error", e.what());
    return ringlm::exit_code(e.kind());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringlm: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
