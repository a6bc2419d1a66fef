// Reading the lines a person types: libedit's line editing (arrows, Ctrl-A/E, ...) and a
// history kept in a file when standard input is a terminal; plain getline otherwise (pipes,
// scripts).
#pragma once

#include <optional>
#include <string>

namespace ringlm::cli {

class LineReader {
 public:
  // `history_file` may be "" (no history kept across runs).
  explicit LineReader(std::string history_file);
  ~LineReader();  // writes the history
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its newline; nullopt at end of input or when Ctrl-C interrupted
  // the read (CtrlC::pressed() tells which). `remember`: add the line to the history (not
  // for the answer to a question).
  std::optional<std::string> read(const char* prompt, bool remember = true);

  bool interactive() const { return tty_; }

 private:
  std::string history_file_;
  bool tty_;
};

// $RINGLM_HISTORY, else ~/.ringlm_history, else "".
std::string default_history_file();

}  // namespace ringlm::cli
