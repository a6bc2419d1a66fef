// Subcommand registry for the ringlm CLI. Each src/cli/cmd_*.cpp registers its own
// subcommand(s) with RINGLM_COMMAND, so adding a command touches exactly one file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace ringlm::cli {

using CommandSetup = void (*)(CLI::App& app);

struct CommandRegistration {
  CommandRegistration(const char* name, CommandSetup setup);
};

// Registered commands, sorted by name.
std::vector<std::pair<std::string, CommandSetup>> registered_commands();

// Thrown by a command to end the program with `code` after its normal output (for example
// `extract` exits 3 when rows failed); main() turns it into the exit status.
struct ExitStatus {
  int code;
};

// Default model directory when --model is omitted: the built-in demo model ($RINGLM_DEMO_MODEL,
// else demo-model/ next to the binary, else the user's cache, written there on first use), or
// "" when there is no cache directory (no HOME). Call it only when the model is needed.
std::string default_model_dir();

}  // namespace ringlm::cli

#define RINGLM_COMMAND(ident)                                                              \
  static void ringlm_cmd_setup_##ident(CLI::App& app);                                     \
  static ::ringlm::cli::CommandRegistration ringlm_cmd_reg_##ident(#ident,                 \
                                                                   ringlm_cmd_setup_##ident); \
  static void ringlm_cmd_setup_##ident(CLI::App& app)
