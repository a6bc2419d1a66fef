#include "server/client_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace ringlm::server {

namespace {

bool endpoint_is(const sockaddr_storage& ss, const std::string& addr, int port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
    if (ntohs(a.sin_port) != port) return false;
    inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  } else if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    if (ntohs(a.sin6_port) != port) return false;
    inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof buf);
  } else {
    return false;
  }
  return addr == buf;
}

bool matches(int fd, const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0 || !endpoint_is(ss, remote_addr, remote_port)) {
    return false;
  }
  len = sizeof ss;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 && endpoint_is(ss, local_addr, local_port);
}

// Each server thread serves one connection at a time: the last answer, or the descriptor the
// connection guard said this thread is serving, is tried first.
thread_local int cached = -1;

}  // namespace

void note_connection_fd(int fd) { cached = fd; }

int find_connection_fd(const std::string& local_addr, int local_port, const std::string& remote_addr,
                       int remote_port) {
  if (cached >= 0 && matches(cached, local_addr, local_port, remote_addr, remote_port)) return cached;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (matches(static_cast<int>(fd), local_addr, local_port, remote_addr, remote_port)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  cached = found;
  return found;
}

bool peer_closed(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0;
  }
  return false;
}

}  // namespace ringlm::server
