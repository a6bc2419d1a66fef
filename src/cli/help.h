// What the CLI prints when a person gets it wrong or asks: defaults shown in every --help,
// and a "did you mean" for a mistyped flag or command.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ringlm::cli {

// Shows the default of every option that takes one in one form, "(default: X)" at the end of
// its description, unless the description already says it that way (a default in words);
// recursively over subcommands. Called once all commands are registered.
void show_defaults(CLI::App& app);

// For the arguments CLI11 did not expect, the closest flag of the command that was given (or
// the closest command name), as "did you mean ..." lines; "" when nothing is close.
std::string suggest(const CLI::App& app, const std::vector<std::string>& unexpected, int argc, char** argv);

// Edit distance (insertions, deletions, substitutions, adjacent swaps), for suggest().
std::size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace ringlm::cli
