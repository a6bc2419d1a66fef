#include "util/progress.h"

namespace ringlm {

namespace {
std::atomic<ProgressReporter*> g_reporter{nullptr};
}

void set_progress_reporter(ProgressReporter* r) { g_reporter.store(r); }

ProgressStage::ProgressStage(std::string stage, std::uint64_t total, const char* unit)
    : reporter_(g_reporter.load()), start_(std::chrono::steady_clock::now()) {
  if (reporter_) reporter_->begin(stage, total, unit);
}

ProgressStage::~ProgressStage() {
  if (reporter_)
    reporter_->end(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
}

void ProgressStage::add(std::uint64_t n) {
  const std::uint64_t done = done_.fetch_add(n) + n;
  if (reporter_) reporter_->update(done);
}

}  // namespace ringlm
