// The process-wide budget for media work (issue #28): decoding an image or clip and running it
// through its tower holds memory far beyond the request's bytes (a 14.6 KB PNG of 9459 x 9459
// pixels decodes to 268 MB). Each chat request with media asks for a lease sized from the
// media's headers (Backend::plan_chat_media) before anything is decoded; the lease is held
// while decoding and encoding and returned after.
//
//   413 media_too_large  one request's estimate exceeds the whole budget: it can never run
//   429 media_busy       the budget or the concurrency limit is taken by other requests now
//
// Leases are granted at once or refused (no waiting on a connection thread), so a burst of
// media requests cannot pile up memory or threads: the client retries (Retry-After: 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace ringlm::server {

struct MediaBudgetOptions {
  std::size_t max_bytes = 1024u << 20;  // --media-memory-mb (0: no media work at all)
  int max_concurrent = 2;               // requests decoding or encoding media at once (--media-concurrency)
};

class MediaBudget {
 public:
  explicit MediaBudget(MediaBudgetOptions options) : options_(options) {}

  // Returned to the budget when destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_) { o.budget_ = nullptr; }
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { release(); }
    void release();
    std::size_t bytes() const { return bytes_; }

   private:
    friend class MediaBudget;
    Lease(MediaBudget* b, std::size_t bytes) : budget_(b), bytes_(bytes) {}
    MediaBudget* budget_ = nullptr;
    std::size_t bytes_ = 0;
  };

  // Throws ApiError 413 or 429 (above); `param` names the request's first media part.
  Lease acquire(std::size_t bytes, const std::string& param);

  std::size_t bytes_in_use() const;
  int active() const;
  std::size_t max_bytes() const { return options_.max_bytes; }
  std::uint64_t refused() const;  // 413 + 429 so far

 private:
  void give_back(std::size_t bytes);

  const MediaBudgetOptions options_;
  mutable std::mutex mu_;
  std::size_t in_use_ = 0;
  int active_ = 0;
  std::uint64_t refused_ = 0;
};

}  // namespace ringlm::server
