#include "cli/progress_display.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

namespace ringlm::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::string amount(std::uint64_t n, const char* unit) {
  char buf[48];
  if (std::strcmp(unit, "bytes") == 0) {
    if (n >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GB", n / 1e9);
    else std::snprintf(buf, sizeof buf, "%.1f MB", n / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%llu%s%s", static_cast<unsigned long long>(n), *unit ? " " : "", unit);
  }
  return buf;
}

class StderrProgress final : public ProgressReporter {
 public:
  StderrProgress() : tty_(isatty(fileno(stderr))) {}
  void set_quiet(double s) {
    std::lock_guard lock(mu_);
    quiet_ = s;
  }

  void begin(const std::string& stage, std::uint64_t total, const char* unit) override {
    std::lock_guard lock(mu_);
    stage_ = stage;
    total_ = total;
    unit_ = unit;
    done_ = 0;
    start_ = last_draw_ = Clock::now();
    drawn_ = false;
  }

  void update(std::uint64_t done) override {
    std::lock_guard lock(mu_);
    done_ = std::max(done_, done);
    if (!tty_) return;
    const auto now = Clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    if (std::chrono::duration<double>(now - start_).count() < quiet_) return;
    last_draw_ = now;
    draw(std::chrono::duration<double>(now - start_).count());
  }

  void end(double seconds) override {
    std::lock_guard lock(mu_);
    if (seconds < quiet_ && !drawn_) return;
    if (tty_) {
      done_ = std::max(done_, total_);
      draw(seconds);
      std::fputc('\n', stderr);
    } else {
      std::fprintf(stderr, "ringlm: %s: %s in %.2f s\n", stage_.c_str(), amount(std::max(done_, total_), unit_).c_str(),
                   seconds);
    }
    std::fflush(stderr);
  }

 private:
  void draw(double seconds) {
    constexpr int kWidth = 30;
    const double frac = total_ ? std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_)) : 0.0;
    const int filled = static_cast<int>(frac * kWidth);
    std::fprintf(stderr, "\r\033[Kringlm: %s [%.*s%*s] %3.0f%% %s/%s %.0f s", stage_.c_str(), filled,
                 "##############################", kWidth - filled, "", frac * 100, amount(done_, unit_).c_str(),
                 amount(total_, unit_).c_str(), seconds);
    std::fflush(stderr);
    drawn_ = true;
  }

  const bool tty_;
  double quiet_ = 1.0;
  std::mutex mu_;
  std::string stage_;
  std::uint64_t total_ = 0, done_ = 0;
  const char* unit_ = "";
  Clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

}  // namespace

void show_progress(double quiet_below_s) {
  static StderrProgress display;
  display.set_quiet(quiet_below_s);
  set_progress_reporter(&display);
}

}  // namespace ringlm::cli
