#include "cli/help.h"

#include <algorithm>

namespace ringlm::cli {

void show_defaults(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_size() == 0 || opt->get_positional()) continue;  // a flag, or positional
    // One form everywhere: the description ends with "(default: X)". A description that
    // already says its default in words (a computed one) keeps it; CLI11's own "TYPE=X"
    // after the flag name is not used.
    if (opt->get_default_str().empty()) opt->capture_default_str();
    const std::string value = opt->get_default_str();
    opt->default_str("");
    const std::string& d = opt->get_description();
    if (d.find("(default: ") != std::string::npos || value.empty() || value == "[]") continue;
    opt->description(d + " (default: " + value + ")");
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) show_defaults(*sub);
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

namespace {

// The closest of `names` to `word`, if within a third of its length (at least 1, at most 3).
std::string closest(const std::string& word, const std::vector<std::string>& names) {
  const std::size_t limit = std::clamp<std::size_t>(word.size() / 3, 1, 3);
  std::string best;
  std::size_t best_d = limit + 1;
  for (const auto& n : names) {
    const std::size_t d = edit_distance(word, n);
    if (d < best_d) best_d = d, best = n;
  }
  return best;
}

}  // namespace

std::string suggest(const CLI::App& app, const std::vector<std::string>& unexpected, int argc, char** argv) {
  // The command is the first argument that names one.
  const CLI::App* cmd = nullptr;
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(sub->get_name());
  for (int i = 1; i < argc && !cmd; ++i)
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == argv[i]) cmd = sub;
  std::string out;
  for (const auto& arg : unexpected) {
    if (arg.rfind("--", 0) == 0 && cmd) {
      const std::string name = arg.substr(0, arg.find('='));
      std::vector<std::string> flags;
      for (const CLI::Option* opt : cmd->get_options())
        for (const auto& l : opt->get_lnames()) flags.push_back("--" + l);
      if (auto best = closest(name, flags); !best.empty())
        out += "ringlm " + cmd->get_name() + ": unknown flag " + name + ": did you mean " + best + "?\n";
    } else if (!cmd && arg.rfind("-", 0) != 0) {
      if (auto best = closest(arg, commands); !best.empty()) out += "ringlm: unknown command " + arg + ": did you mean " + best + "?\n";
    }
  }
  return out;
}

}  // namespace ringlm::cli
