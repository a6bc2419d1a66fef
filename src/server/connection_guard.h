// The connection layer in front of cpp-httplib's request handling. httplib 0.11 (Debian 12)
// has no limit on the number or size of header lines, applies --max-body to Content-Length
// only (a chunked body is read whole, a gzip body is inflated whole), keeps waiting
// connections in an unbounded job list and gives a slow client unlimited time to send its
// head. GuardedServer overrides httplib's per-connection entry point: it admits or refuses the
// connection (a cap on open connections and on connections per client address, with
// eviction of idle ones), reads each request itself with the limits of http_framing.h and
// the deadlines below, and only then hands httplib a normalised, fully read request (plain
// Content-Length body) through an in-memory Stream. Routes, handlers and responses stay
// httplib's. See docs/server.md "Limits".
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "server/http_framing.h"

namespace ringlm::server {

struct ConnectionLimits {
  FramingLimits framing;
  std::chrono::milliseconds header_timeout{10000};  // first byte of a request -> end of its head
  std::chrono::milliseconds idle_timeout{5000};     // a connection with no request in progress
  std::chrono::milliseconds body_timeout{30000};    // end of the head -> end of the body
  std::chrono::milliseconds write_timeout{10000};   // one blocked write of a response
  int max_connections = 256;                        // open connections; more get 503
  int max_connections_per_client = 64;              // per client IP address; more get 503
  double connection_rate_per_client = 100;          // new connections per second per client IP (burst 2x)
  // A head that has been arriving for longer than this may be evicted to make room for a new
  // connection past a cap (a fresher one is not: the new connection gets 503 instead).
  std::chrono::milliseconds slow_head{1000};
};

class ConnectionTable;

// Bounds what the C library's allocator keeps after a burst of connections: at most 4 malloc
// arenas (glibc makes one per thread that allocates, up to 8 per core, here 16), and fixed
// trim and mmap thresholds, so a freed large block goes back to the system at once and an
// arena's free top is trimmed past 1 MiB. Without this, each arena that a connection thread
// used kept ~3 MB resident with a few KB in use (glibc raises its trim threshold after every
// large free, up to 64 MiB, and malloc_trim does not trim the top of a thread's arena), and an
// attack run left the server ~40 MB above its heap in use (RELIABILITY.md). Process-wide and
// glibc-only; call once before the server starts threads. A no-op elsewhere.
void bound_allocator_retention();

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(ConnectionLimits limits);
  ~GuardedServer() override;

  // Called with the status of every request refused by this layer (not seen by httplib's logger).
  void set_refusal_observer(std::function<void(int status)> f) { on_refused_ = std::move(f); }
  int open_connections() const;
  // Connections whose request head has begun to arrive and is not complete (read-only; lets
  // tests wait for a state instead of sleeping).
  int heads_in_progress() const;
  const ConnectionLimits& limits() const { return limits_; }

 private:
  bool process_and_close_socket(socket_t sock) override;
  void refuse(int fd, int status, const std::string& code, const std::string& message, bool linger);

  ConnectionLimits limits_;
  std::unique_ptr<ConnectionTable> table_;
  std::function<void(int)> on_refused_;
};

}  // namespace ringlm::server
