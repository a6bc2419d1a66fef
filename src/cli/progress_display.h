// The CLI's ProgressReporter (util/progress.h) on stderr: on a terminal a bar redrawn at most
// ten times a second; otherwise one line when a stage ends. `quiet_below_s`: stages shorter
// than this show nothing (loading a model quantizes in a blink on small models; say nothing
// then), 0 = every stage.
#pragma once

#include "util/progress.h"

namespace ringlm::cli {

// Installs the display for the rest of the process.
void show_progress(double quiet_below_s);

}  // namespace ringlm::cli
