// Ctrl-C as an in-band request instead of the end of the program: while a CtrlC object
// lives, SIGINT only raises a flag that the interactive commands poll (chat stops the reply
// it is streaming, the prompt notices it). Installed without SA_RESTART so a blocking read
// at the prompt returns and the flag can be looked at.
#pragma once

namespace ringlm::cli {

class CtrlC {
 public:
  CtrlC();   // installs the handler
  ~CtrlC();  // restores the previous one
  CtrlC(const CtrlC&) = delete;
  CtrlC& operator=(const CtrlC&) = delete;

  static bool pressed();  // since the last clear()
  static void clear();
};

}  // namespace ringlm::cli
