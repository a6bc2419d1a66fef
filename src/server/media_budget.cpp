#include "server/media_budget.h"

#include "server/api_error.h"

namespace ringlm::server {

namespace {
std::string mib(std::size_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }
}  // namespace

MediaBudget::Lease& MediaBudget::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release();
    budget_ = o.budget_;
    bytes_ = o.bytes_;
    o.budget_ = nullptr;
  }
  return *this;
}

void MediaBudget::Lease::release() {
  if (budget_) budget_->give_back(bytes_);
  budget_ = nullptr;
}

MediaBudget::Lease MediaBudget::acquire(std::size_t bytes, const std::string& param) {
  std::lock_guard lock(mu_);
  if (bytes > options_.max_bytes) {
    ++refused_;
    throw ApiError(413,
                   "the request's images and audio need about " + mib(bytes) + " to decode and encode; this server's media "
                   "budget is " + mib(options_.max_bytes) + " (ringlm serve --media-memory-mb): send smaller or fewer images",
                   param, "media_too_large");
  }
  if (active_ >= options_.max_concurrent || in_use_ + bytes > options_.max_bytes) {
    ++refused_;
    throw ApiError(429,
                   "server is busy with other requests' images and audio (" + std::to_string(active_) + " decoding, " +
                       mib(in_use_) + " of " + mib(options_.max_bytes) + " in use): retry shortly",
                   param, "media_busy");
  }
  in_use_ += bytes;
  ++active_;
  return Lease(this, bytes);
}

void MediaBudget::give_back(std::size_t bytes) {
  std::lock_guard lock(mu_);
  in_use_ -= bytes;
  --active_;
}

std::size_t MediaBudget::bytes_in_use() const {
  std::lock_guard lock(mu_);
  return in_use_;
}

int MediaBudget::active() const {
  std::lock_guard lock(mu_);
  return active_;
}

std::uint64_t MediaBudget::refused() const {
  std::lock_guard lock(mu_);
  return refused_;
}

}  // namespace ringlm::server
