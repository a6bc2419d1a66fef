#include "server/connection_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <malloc.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "server/api_error.h"
#include "server/client_socket.h"
#include "server/response.h"

namespace ringlm::server {

void bound_allocator_retention() {
#if defined(__GLIBC__)
  mallopt(M_ARENA_MAX, 4);
  mallopt(M_TRIM_THRESHOLD, 1 << 20);
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
}

using Clock = std::chrono::steady_clock;

namespace {

// Set while a connection runs on the accept thread because every connection thread is taken:
// it is answered 503 at once instead of waiting in a queue.
thread_local bool t_overflow = false;

// Waits are cut into slices so that a stopping server is noticed promptly.
constexpr auto kSlice = std::chrono::milliseconds(200);
// Threads beyond max_connections: evicted connections still hold theirs for a moment.
constexpr int kReserveThreads = 16;

const char* reason(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

struct Peer {
  std::string remote_ip, local_ip;
  int remote_port = 0, local_port = 0;
};

void endpoint(const sockaddr_storage& ss, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
    inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
    port = ntohs(a.sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof buf);
    port = ntohs(a.sin6_port);
  }
  ip = buf;
}

Peer peer_of(int fd) {
  Peer p;
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) endpoint(ss, p.remote_ip, p.remote_port);
  len = sizeof ss;
  ss = {};
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) endpoint(ss, p.local_ip, p.local_port);
  return p;
}

int ms_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Writes all of `data` or fails when the socket stays unwritable past the deadline.
bool send_all(int fd, const char* data, std::size_t size, Clock::time_point deadline) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    pollfd p{fd, POLLOUT, 0};
    const int wait = ms_until(deadline);
    if (wait == 0 || ::poll(&p, 1, wait) <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return false;
  }
  return true;
}

// One fully read request, served to httplib from memory; responses go to the socket.
class FramedStream final : public httplib::Stream {
 public:
  FramedStream(int fd, std::string request, const Peer& peer, std::chrono::milliseconds write_timeout)
      : fd_(fd), request_(std::move(request)), peer_(peer), write_timeout_(write_timeout) {}

  using httplib::Stream::write;

  bool is_readable() const override { return pos_ < request_.size(); }
  bool is_writable() const override {
    pollfd p{fd_, POLLOUT, 0};
    const int ms = static_cast<int>(write_timeout_.count());
    return ::poll(&p, 1, ms) > 0 && !(p.revents & (POLLERR | POLLHUP | POLLNVAL));
  }
  ssize_t read(char* ptr, size_t size) override {
    const std::size_t n = std::min(size, request_.size() - pos_);
    std::copy_n(request_.data() + pos_, n, ptr);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!head_done_) note_head(ptr, size);
    if (!send_all(fd_, ptr, size, Clock::now() + write_timeout_)) return -1;
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = peer_.remote_ip;
    port = peer_.remote_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = peer_.local_ip;
    port = peer_.local_port;
  }
  socket_t socket() const override { return fd_; }

  // Whether the response said "Connection: close" (httplib does not report it for responses
  // whose handler set the header, e.g. a 405 whose body was not meant to be read).
  bool response_closes() const { return closes_; }

 private:
  void note_head(const char* ptr, std::size_t size) {
    head_.append(ptr, std::min<std::size_t>(size, 16384 - std::min<std::size_t>(head_.size(), 16384)));
    const std::size_t end = head_.find("\r\n\r\n");
    if (end == std::string::npos && head_.size() < 16384) return;
    head_done_ = true;
    std::string lowered = head_.substr(0, end == std::string::npos ? head_.size() : end + 2);
    for (char& c : lowered) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    closes_ = lowered.find("\r\nconnection: close\r\n") != std::string::npos;
    head_.clear();
  }

  int fd_;
  std::string request_;
  std::size_t pos_ = 0;
  const Peer& peer_;
  std::chrono::milliseconds write_timeout_;
  std::string head_;
  bool head_done_ = false, closes_ = false;
};

// One thread per connection, started on demand up to a cap. httplib's ThreadPool queues
// connections without bound behind busy threads; here a connection either gets a thread now
// or is refused on the accept thread. Threads idle for kThreadIdle exit, and the last one of a
// burst returns freed heap to the system, so that memory taken by a flood of connections
// (stacks, per-thread malloc arenas) does not stay with the process.
class ConnectionThreads final : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(std::size_t max_threads) : max_(max_threads) {}
  ~ConnectionThreads() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock lock(mu_);
    if (jobs_.size() >= idle_ && live_ >= max_) {
      lock.unlock();
      t_overflow = true;
      fn();
      t_overflow = false;
      return;
    }
    jobs_.push_back(std::move(fn));
    if (jobs_.size() > idle_) {
      ++live_;
      std::thread([this] { work(); }).detach();
    } else {
      cv_.notify_one();
    }
  }

  void shutdown() override {
    std::unique_lock lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    exited_.wait(lock, [this] { return live_ == 0; });
  }

 private:
  static constexpr auto kThreadIdle = std::chrono::seconds(10);

  void work() {
    std::unique_lock lock(mu_);
    for (;;) {
      ++idle_;
      const bool got = cv_.wait_for(lock, kThreadIdle, [this] { return stopping_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) {  // stopping, or idle for long enough
        const bool last_of_burst = --live_ <= 4 && !got;
        exited_.notify_all();
        lock.unlock();
        if (last_of_burst) malloc_trim(0);
        return;
      }
      auto fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }

  std::size_t max_;
  std::mutex mu_;
  std::condition_variable cv_, exited_;
  std::deque<std::function<void()>> jobs_;
  std::size_t live_ = 0, idle_ = 0;
  bool stopping_ = false;
};

enum class Phase { Idle, Head, Busy };

struct Entry {
  int fd;
  std::string client;
  Phase phase = Phase::Idle;
  Clock::time_point since = Clock::now();
  std::atomic<bool> evicted{false};
};

}  // namespace

// Open connections by phase and client. Eviction shuts a connection's socket down while it is
// still registered (so its descriptor cannot have been reused); its own thread then sees the
// shutdown, removes the entry and closes the descriptor.
class ConnectionTable {
 public:
  ConnectionTable(int max_total, int max_per_client, double rate_per_client, std::chrono::milliseconds slow_head)
      : max_total_(max_total), max_per_client_(max_per_client), rate_(rate_per_client), slow_head_(slow_head) {}

  // Registers a connection, evicting an idle (or slow-head) one if a cap is reached. Returns
  // nullptr and sets `why` when there is no room.
  Entry* admit(int fd, const std::string& client, std::string& why) {
    std::lock_guard lock(mu_);
    if (!take_token(client)) {
      why = "client " + client + " opens connections faster than " + std::to_string(static_cast<int>(rate_)) +
            " per second (--max-connection-rate-per-client)";
      return nullptr;
    }
    int total = 0, mine = 0;
    for (const auto& e : entries_) {
      if (e.evicted) continue;
      ++total;
      if (e.client == client) ++mine;
    }
    if (mine >= max_per_client_ && !evict_one(&client)) {
      why = "client " + client + " already has " + std::to_string(mine) + " open connections (limit " +
            std::to_string(max_per_client_) + " per client, --max-connections-per-client)";
      return nullptr;
    }
    if (total >= max_total_ && !(mine >= max_per_client_) && !evict_one(nullptr)) {
      why = "the server already has " + std::to_string(total) + " open connections (limit " + std::to_string(max_total_) +
            ", --max-connections)";
      return nullptr;
    }
    entries_.emplace_back();
    Entry& e = entries_.back();
    e.fd = fd;
    e.client = client;
    return &e;
  }

  // `since` is when the current phase began: a connection that stays idle (admitted, then
  // Idle again at the top of its loop) keeps its admission time, so idle connections are
  // evicted in the order they were admitted, not in the order their threads got to run.
  void set_phase(Entry* e, Phase p) {
    std::lock_guard lock(mu_);
    if (e->phase == p) return;
    e->phase = p;
    e->since = Clock::now();
  }

  void remove(Entry* e) {
    std::lock_guard lock(mu_);
    entries_.remove_if([e](const Entry& x) { return &x == e; });
  }

  int size() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(entries_.size());
  }

  int count(Phase p) const {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& e : entries_) n += !e.evicted && e.phase == p;
    return n;
  }

 private:
  // Shuts down the connection that has waited longest without sending a request (or has been
  // sending its head for longer than slow_head_), optionally only among `client`'s.
  bool evict_one(const std::string* client) {
    const auto now = Clock::now();
    Entry* victim = nullptr;
    for (auto& e : entries_) {
      if (e.evicted || (client && e.client != *client)) continue;
      const bool evictable = e.phase == Phase::Idle || (e.phase == Phase::Head && now - e.since > slow_head_);
      if (!evictable) continue;
      // Idle connections go before slow heads, older before newer.
      if (!victim || (e.phase == Phase::Idle && victim->phase != Phase::Idle) ||
          (e.phase == victim->phase && e.since < victim->since)) {
        victim = &e;
      }
    }
    if (!victim) return false;
    victim->evicted = true;
    ::shutdown(victim->fd, SHUT_RDWR);
    return true;
  }

  // Per-client token bucket: `rate_` new connections per second, bursts of twice that. Without
  // it one client opening thousands of connections a second (each refused or evicting an idle
  // one) takes the CPU the real requests need.
  bool take_token(const std::string& client) {
    if (rate_ <= 0) return true;
    const auto now = Clock::now();
    if (buckets_.size() > 4096) {  // forget clients whose bucket has refilled
      for (auto it = buckets_.begin(); it != buckets_.end();) {
        it = std::chrono::duration<double>(now - it->second.last).count() * rate_ > 2 * rate_ ? buckets_.erase(it) : ++it;
      }
    }
    auto [it, fresh] = buckets_.try_emplace(client, Bucket{2 * rate_, now});
    Bucket& b = it->second;
    if (!fresh) {
      b.tokens = std::min(2 * rate_, b.tokens + std::chrono::duration<double>(now - b.last).count() * rate_);
      b.last = now;
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  struct Bucket {
    double tokens;
    Clock::time_point last;
  };
  int max_total_, max_per_client_;
  double rate_;
  std::chrono::milliseconds slow_head_;
  std::map<std::string, Bucket> buckets_;
  mutable std::mutex mu_;
  std::list<Entry> entries_;
};

GuardedServer::GuardedServer(ConnectionLimits limits)
    : limits_(limits),
      table_(std::make_unique<ConnectionTable>(limits.max_connections, limits.max_connections_per_client,
                                               limits.connection_rate_per_client, limits.slow_head)) {
  set_payload_max_length(limits_.framing.max_body);
  const std::size_t threads = static_cast<std::size_t>(limits_.max_connections) + kReserveThreads;
  new_task_queue = [threads] { return new ConnectionThreads(threads); };
}

GuardedServer::~GuardedServer() = default;

int GuardedServer::open_connections() const { return table_->size(); }

int GuardedServer::heads_in_progress() const { return table_->count(Phase::Head); }

void GuardedServer::refuse(int fd, int status, const std::string& code, const std::string& message, bool linger) {
  // Counted first: a client that reads this answer and asks /metrics at once must see it.
  if (on_refused_) on_refused_(status);
  const std::string body = dump_json(ApiError(status, message, "", code).to_json());
  const std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
                           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\nConnection: close\r\n\r\n";
  const auto deadline = Clock::now() + (linger ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(0));
  if (send_all(fd, head.data(), head.size(), deadline) && send_all(fd, body.data(), body.size(), deadline)) {
    ::shutdown(fd, SHUT_WR);
    // Read (and drop) what the client is still sending for a moment: closing with unread data
    // makes the kernel send a reset, which can destroy the response before it is read.
    char buf[16384];
    std::size_t drained = 0;
    const auto until = Clock::now() + (linger ? std::chrono::milliseconds(500) : std::chrono::milliseconds(0));
    while (drained < (256u << 10)) {
      ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        drained += static_cast<std::size_t>(n);
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
      pollfd p{fd, POLLIN, 0};
      const int wait = ms_until(until);
      if (wait == 0 || ::poll(&p, 1, wait) <= 0) break;
    }
  }
}

namespace {

enum class Got { Data, Closed, Timeout };

// Appends what arrives to `in`, waiting until the deadline. Closed: the peer hung up, the
// connection was evicted, or the server is stopping.
Got receive(int fd, std::string& in, Clock::time_point deadline, const Entry& e,
            const std::atomic<socket_t>& listener) {
  char buf[65536];
  for (;;) {
    if (e.evicted || listener == INVALID_SOCKET) return Got::Closed;
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      in.append(buf, static_cast<std::size_t>(n));
      return Got::Data;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return Got::Closed;
    const int left = ms_until(deadline);
    if (left == 0) return Got::Timeout;
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, std::min<int>(left, static_cast<int>(kSlice.count())));
  }
}

std::string ms_text(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

}  // namespace

bool GuardedServer::process_and_close_socket(socket_t sock) {
  const Peer peer = peer_of(sock);
  Entry* entry = nullptr;
  std::string why;
  if (t_overflow) {
    refuse(sock, 503, "too_many_connections",
           "every connection thread is busy (limit " + std::to_string(limits_.max_connections) + ", --max-connections)",
           false);
  } else if (!(entry = table_->admit(sock, peer.remote_ip, why))) {
    const bool rate = why.find("per second") != std::string::npos;
    refuse(sock, rate ? 429 : 503, rate ? "connection_rate_limited" : "too_many_connections", why, !rate);
  }
  if (!entry) {
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return false;
  }

  const FramingLimits& fl = limits_.framing;
  std::string in;  // bytes received and not yet consumed (may hold a pipelined next request)
  std::size_t served = 0;
  bool ok = true;
  for (;;) {
    table_->set_phase(entry, Phase::Idle);
    if (in.empty() && receive(sock, in, Clock::now() + limits_.idle_timeout, *entry, svr_sock_) != Got::Data) break;
    table_->set_phase(entry, Phase::Head);

    RequestHead head;
    std::string body;
    Got got = Got::Data;
    try {
      const auto head_deadline = Clock::now() + limits_.header_timeout;
      std::size_t head_len;
      while ((head_len = find_head_end(in, fl)) == 0) {
        got = receive(sock, in, head_deadline, *entry, svr_sock_);
        if (got == Got::Timeout) {
          throw FramingError(408, "request_timeout",
                             "request head did not arrive within " + ms_text(limits_.header_timeout));
        }
        if (got == Got::Closed) break;
      }
      if (got == Got::Closed) break;
      head = parse_head(std::string_view(in).substr(0, head_len), fl);
      in.erase(0, head_len);
      if (head.expect_continue) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        send_all(sock, kContinue.data(), kContinue.size(), Clock::now() + limits_.write_timeout);
      }
      const auto body_deadline = Clock::now() + limits_.body_timeout;
      const auto body_timeout = [&] {
        return FramingError(408, "request_timeout", "request body did not arrive within " + ms_text(limits_.body_timeout));
      };
      if (head.chunked) {
        ChunkedDecoder decoder(fl);
        for (;;) {
          in.erase(0, decoder.feed(in, body));
          if (decoder.done()) break;
          got = receive(sock, in, body_deadline, *entry, svr_sock_);
          if (got == Got::Timeout) throw body_timeout();
          if (got == Got::Closed) break;
        }
      } else {
        while (in.size() < head.content_length) {
          got = receive(sock, in, body_deadline, *entry, svr_sock_);
          if (got == Got::Timeout) throw body_timeout();
          if (got == Got::Closed) break;
        }
        if (got != Got::Closed) {
          body = in.substr(0, head.content_length);
          in.erase(0, head.content_length);
        }
      }
      if (got == Got::Closed) break;
    } catch (const FramingError& e) {
      refuse(sock, e.status(), e.code(), e.what(), true);
      break;
    }

    table_->set_phase(entry, Phase::Busy);
    FramedStream strm(sock, normalized_head(head, body.size()) + body, peer, limits_.write_timeout);
    body.clear();
    body.shrink_to_fit();
    note_connection_fd(sock);
    const bool last = ++served >= keep_alive_max_count_ || svr_sock_ == INVALID_SOCKET;
    bool closed = false;
    ok = process_request(strm, last, closed, nullptr);
    if (!ok || closed || last || strm.response_closes()) break;
  }
  table_->remove(entry);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace ringlm::server
