// Progress of the long jobs (convert, make-test-model, GGUF export, quantizing or repacking
// weights at load): library code names the stage and how far it has got; whoever runs it
// decides how to show that (the CLI: a bar on a terminal, a line per stage otherwise). With
// no reporter installed — the default: servers, tests, the Python module — a stage costs one
// atomic load.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace ringlm {

class ProgressReporter {
 public:
  virtual ~ProgressReporter() = default;
  // `total`: units of work (bytes or items, see `unit`); 0 = unknown.
  virtual void begin(const std::string& stage, std::uint64_t total, const char* unit) = 0;
  virtual void update(std::uint64_t done) = 0;  // done so far, from any thread, often
  virtual void end(double seconds) = 0;
};

// Installs `r` for the whole process (nullptr: silent). Not owned.
void set_progress_reporter(ProgressReporter* r);

// One stage: begin on construction, end on destruction; add() is thread-safe.
class ProgressStage {
 public:
  ProgressStage(std::string stage, std::uint64_t total, const char* unit = "");
  ~ProgressStage();
  ProgressStage(const ProgressStage&) = delete;
  ProgressStage& operator=(const ProgressStage&) = delete;
  void add(std::uint64_t n);

 private:
  ProgressReporter* reporter_;
  std::atomic<std::uint64_t> done_{0};
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ringlm
