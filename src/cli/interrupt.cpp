#include "cli/interrupt.h"

#include <csignal>

namespace ringlm::cli {

namespace {

volatile std::sig_atomic_t g_pressed = 0;
struct sigaction g_previous {};

extern "C" void on_sigint(int) { g_pressed = 1; }

}  // namespace

CtrlC::CtrlC() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a read at the prompt is interrupted
  sigaction(SIGINT, &sa, &g_previous);
}

CtrlC::~CtrlC() { sigaction(SIGINT, &g_previous, nullptr); }

bool CtrlC::pressed() { return g_pressed != 0; }
void CtrlC::clear() { g_pressed = 0; }

}  // namespace ringlm::cli
