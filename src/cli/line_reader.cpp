#include "cli/line_reader.h"

#include <editline/readline.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace ringlm::cli {

std::string default_history_file() {
  if (const char* p = std::getenv("RINGLM_HISTORY")) return p;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.ringlm_history";
  return "";
}

LineReader::LineReader(std::string history_file)
    : history_file_(std::move(history_file)), tty_(isatty(fileno(stdin)) && isatty(fileno(stderr))) {
  if (!tty_) return;
  using_history();
  stifle_history(1000);
  if (!history_file_.empty()) read_history(history_file_.c_str());
}

LineReader::~LineReader() {
  if (tty_ && !history_file_.empty()) write_history(history_file_.c_str());
}

std::optional<std::string> LineReader::read(const char* prompt, bool remember) {
  if (!tty_) {
    std::string line;
    if (!std::getline(std::cin, line)) {
      std::cin.clear();  // an interrupted read also lands here
      return std::nullopt;
    }
    return line;
  }
  char* raw = readline(prompt);
  if (!raw) return std::nullopt;
  std::string line(raw);
  std::free(raw);
  if (remember && line.find_first_not_of(' ') != std::string::npos) add_history(line.c_str());
  return line;
}

}  // namespace ringlm::cli
