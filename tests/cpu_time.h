// CPU time for the tests that bound how long a piece of work takes (linear-time parsers and the
// like). Wall-clock bounds failed on a loaded CI host (ctest -j2 on 2 cores, other builds
// running): time spent waiting for a core is not the work's. The calling thread's CPU time
// counts only what the thread itself executed. Shared by every test area; includes nothing of src/.
#pragma once

#include <time.h>

namespace ringlm::testing {

// Seconds of CPU the calling thread has used so far (CLOCK_THREAD_CPUTIME_ID).
inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU seconds the calling thread spends in f() (work f hands to other threads is not counted:
// use it for single-threaded work).
template <typename F>
double thread_cpu_seconds_of(F&& f) {
  const double t0 = thread_cpu_seconds();
  f();
  return thread_cpu_seconds() - t0;
}

}  // namespace ringlm::testing
