// ringlm command-line entry point: collects the registered subcommands and runs one.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli/command.h"
#include "cli/compute_device.h"
#include "cli/environment.h"
#include "cli/progress_display.h"
#include "cli/help.h"
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

std::string default_model_dir() {
  if (const char* env = std::getenv("RINGLM_DEMO_MODEL")) return env;
  // The demo model is written next to the binary by `ringlm make-demo-model` at setup time.
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto dir = exe.parent_path() / "demo-model";
    if (std::filesystem::exists(dir / "config.json")) return dir.string();
  }
  return "";
}

}  // namespace ringlm::cli

int main(int argc, char** argv) {
  CLI::App app{"ringlm: a native runtime for Gemma 4 on-device models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", ringlm::cli::vulkan_compiled_in() ? "ringlm 0.1.0 (Vulkan backend: compiled in)"
                                                                      : "ringlm 0.1.0 (Vulkan backend: not compiled in)");
  for (auto& [name, setup] : ringlm::cli::registered_commands()) setup(app);
  ringlm::cli::show_defaults(app);
  ringlm::cli::show_progress(/*quiet_below_s=*/1.0);  // e.g. quantizing a large checkpoint at load
  try {
    ringlm::cli::apply_process_environment();  // RINGLM_ISA, RINGLM_THREADS
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // Unexpected arguments (a mistyped flag or command): say what was probably meant.
    if (code != 0) std::fputs(ringlm::cli::suggest(app, app.remaining(true), argc, argv).c_str(), stderr);
    return code;
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
