// load_test --throughput: streaming clients against `ringlm serve`, for decode throughput
// and time to first token. Each client sends its share of --requests streamed chat requests
// one after another (a fresh connection each, so a request's time includes its connect), and
// every request's TTFT (request sent -> first non-empty content delta) and completion tokens
// (the usage chunk) are recorded; aggregate tok/s = all completion tokens / wall time.
// --disconnect-check then opens one stream, hangs up after its first token and times how
// long until /metrics shows no active slot (the row freed at the next step).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace load_test {

struct StreamOutcome {
  int status = 0;
  double ttft_s = -1;   // -1: no content arrived
  double total_s = 0;
  int completion_tokens = 0;
};

inline int connect_loopback(const std::string& host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{300, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

inline std::string stream_request(const std::string& host, const nlohmann::json& body) {
  const std::string b = body.dump();
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host +
         "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + std::to_string(b.size()) +
         "\r\n\r\n" + b;
}

// True once `got` holds a delta with non-empty content (the first chunk is the role alone).
inline bool has_content(const std::string& got, std::size_t from) {
  for (std::size_t at = got.find("\"content\":\"", from); at != std::string::npos;
       at = got.find("\"content\":\"", at + 1)) {
    if (at + 11 < got.size() && got[at + 11] != '"') return true;
  }
  return false;
}

// One streamed request; `hang_up_after_first`: close the socket at the first content.
inline StreamOutcome stream_once(const std::string& host, int port, const nlohmann::json& body,
                                 bool hang_up_after_first = false) {
  using Clock = std::chrono::steady_clock;
  StreamOutcome o;
  const auto t0 = Clock::now();
  const int fd = connect_loopback(host, port);
  if (fd < 0) return o;
  const std::string req = stream_request(host, body);
  send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  std::size_t scanned = 0;
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
    if (o.ttft_s < 0 && has_content(got, scanned > 16 ? scanned - 16 : 0)) {
      o.ttft_s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (hang_up_after_first) break;
    }
    scanned = got.size();
  }
  close(fd);
  o.total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (got.rfind("HTTP/1.1 ", 0) == 0) o.status = std::atoi(got.c_str() + 9);
  if (const auto at = got.rfind("\"completion_tokens\":"); at != std::string::npos)
    o.completion_tokens = std::atoi(got.c_str() + at + 20);
  if (!hang_up_after_first && got.find("data: [DONE]") == std::string::npos) o.status = 0;  // cut short
  return o;
}

inline nlohmann::json throughput_body(int i, int max_tokens) {
  return {{"messages", {{{"role", "user"}, {"content", "Write a long story about a lighthouse keeper, part " + std::to_string(i) + "."}}}},
          {"max_tokens", max_tokens},
          {"temperature", 0},
          {"stream", true},
          {"stream_options", {{"include_usage", true}}}};
}

}  // namespace load_test
