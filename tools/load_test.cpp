// Bounded load test for `ringlm serve` on loopback: N requests from C concurrent clients, a
// mix of plain, streamed, json_schema and completion requests, clients that hang up mid-stream,
// malformed and oversized bodies. Reports latency percentiles, status counts, the server's RSS
// before/after (from /proc/PID/status) and whether any slot, queue place or KV was left held.
//
//   load_test --port 8080 --pid $(pidof ringlm) [--requests 300] [--clients 16] [--max-body 1048576]
//
// Exits 1 if any request got an unexpected status or the server kept a session afterwards.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "load_test_stream.h"

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

enum class Kind { Plain, Streamed, JsonSchema, Completion, Disconnect, Malformed, Oversized };
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Plain: return "plain";
    case Kind::Streamed: return "streamed";
    case Kind::JsonSchema: return "json_schema";
    case Kind::Completion: return "completion";
    case Kind::Disconnect: return "disconnect_mid_stream";
    case Kind::Malformed: return "malformed_json";
    case Kind::Oversized: return "oversized_body";
  }
  return "?";
}

Kind pick_kind(std::mt19937& rng) {
  int r = static_cast<int>(rng() % 100);
  if (r < 30) return Kind::Plain;
  if (r < 55) return Kind::Streamed;
  if (r < 70) return Kind::JsonSchema;
  if (r < 78) return Kind::Completion;
  if (r < 88) return Kind::Disconnect;
  if (r < 94) return Kind::Malformed;
  return Kind::Oversized;
}

long rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

struct Outcome {
  Kind kind;
  int status;  // HTTP status; 0 = transport error; -1 = we hung up on purpose
  double seconds;
};

json chat_body(int i, bool stream, bool schema) {
  json body = {{"model", "any"},
               {"messages", {{{"role", "user"}, {"content", "Load test request " + std::to_string(i)}}}},
               {"max_tokens", 48}};
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  if (schema) {
    json row = {{"type", "object"},
                {"properties", {{"id", {{"type", "integer"}}}, {"label", {{"enum", {"a", "b"}}}}}},
                {"required", {"id", "label"}}};
    body["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "row"}, {"schema", row}}}};
    body["max_tokens"] = 64;
  }
  return body;
}

// Opens a stream, reads until some content arrived, then closes the socket.
int hang_up_mid_stream(const std::string& host, int port, int i) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return 0;
  }
  json body = chat_body(i, true, false);
  body["max_tokens"] = 400;
  const std::string b = body.dump();
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(b.size()) + "\r\n\r\n" + b;
  send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  char buf[2048];
  int status = 0;
  while (got.size() < 1500) {  // headers + a few chunks
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  if (got.rfind("HTTP/1.1 ", 0) == 0) status = std::atoi(got.c_str() + 9);
  close(fd);
  return status == 200 ? -1 : status;  // -1: we hung up on a stream as planned
}

// ---- attacks (--attacks): hostile clients mixed into the normal traffic, from another loopback
// address (127.0.0.2) as a different client would be. Each loops until `stop`; the outcome of
// every attempt (HTTP status, or 0 when the server closed the connection) is counted.

int connect_from(const std::string& source, const std::string& host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, source.c_str(), &src.sin_addr);
  bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends until the server answers or closes; returns the status (0: closed without one).
int send_and_read_status(int fd, const std::string& head, const std::string& chunk, std::size_t repeat,
                         const std::atomic<bool>& stop) {
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (send(fd, head.data(), head.size(), MSG_NOSIGNAL) < 0) return 0;
  for (std::size_t i = 0; i < repeat && !stop; ++i) {
    if (send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) break;
    char c;
    if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) >= 0) break;  // an answer (or EOF) arrived
  }
  std::string got;
  char buf[1024];
  for (int i = 0; i < 20 && got.find("\r\n") == std::string::npos; ++i) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(got.c_str() + 9) : 0;
}

struct AttackStats {
  std::mutex mu;
  std::map<std::string, std::map<int, int>> outcomes;  // attack -> status -> count
  void add(const std::string& attack, int status) {
    std::lock_guard lock(mu);
    outcomes[attack][status]++;
  }
};

// Paces one flooding attacker at a fixed number of new connections per second, so two runs (two
// server builds) face the same attack volume; unpaced, the volume follows how fast the server
// answers and how much CPU the scheduler leaves the attacker, and runs cannot be compared.
class Pacer {
 public:
  explicit Pacer(double per_second)
      : step_(per_second > 0 ? std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / per_second))
                             : Clock::duration::zero()),
        next_(Clock::now()) {}
  // Waits for the next slot (at most 100 ms at a time, so a stop is seen); false once stopped.
  bool wait(const std::atomic<bool>& stop) {
    if (step_ == Clock::duration::zero()) return !stop;
    next_ += step_;
    // Behind by more than a second (the server held a connection): drop the backlog, not burst.
    if (Clock::now() - next_ > std::chrono::seconds(1)) next_ = Clock::now();
    while (!stop && Clock::now() < next_)
      std::this_thread::sleep_for(std::min<Clock::duration>(next_ - Clock::now(), std::chrono::milliseconds(100)));
    return !stop;
  }
  bool paced() const { return step_ != Clock::duration::zero(); }

 private:
  Clock::duration step_;
  Clock::time_point next_;
};

std::string base64_encode(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 3) {
    std::uint32_t v = static_cast<std::uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<std::uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<std::uint8_t>(in[i + 2]);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? k[v & 63] : '=';
  }
  return out;
}

std::vector<std::thread> start_attacks(const std::string& host, int port, std::size_t max_body, int idle_connections,
                                       double rate, const std::string& bomb_image, const std::atomic<bool>& stop,
                                       AttackStats& stats) {
  const std::string src = "127.0.0.2";
  std::vector<std::thread> threads;
  // A loopback Host: a keyless server refuses other names (DNS rebinding protection).
  const std::string chat_head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  // Chunked bodies 4x over the limit.
  threads.emplace_back([=, &stop, &stats] {
    const std::string piece = "4000\r\n" + std::string(0x4000, 'a') + "\r\n";
    Pacer pace(rate);
    while (pace.wait(stop)) {
      int fd = connect_from(src, host, port);
      if (fd < 0) continue;
      stats.add("chunked_over_limit", send_and_read_status(fd, chat_head + "Transfer-Encoding: chunked\r\n\r\n", piece,
                                                           4 * max_body / 0x4000, stop));
      close(fd);
    }
  });
  // A gzip body (a real gzip header; the server must not inflate it).
  threads.emplace_back([=, &stop, &stats] {
    const std::string body = std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10) + std::string(300000, '\0');
    Pacer pace(rate);
    while (pace.wait(stop)) {
      int fd = connect_from(src, host, port);
      if (fd < 0) continue;
      stats.add("gzip_body", send_and_read_status(fd, chat_head + "Content-Encoding: gzip\r\nContent-Length: " +
                                                         std::to_string(body.size()) + "\r\n\r\n",
                                                  body, 1, stop));
      close(fd);
      if (!pace.paced()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  // Endless 8 KB header lines.
  threads.emplace_back([=, &stop, &stats] {
    const std::string line = "X-Endless: " + std::string(8000, 'e') + "\r\n";
    Pacer pace(rate);
    while (pace.wait(stop)) {
      int fd = connect_from(src, host, port);
      if (fd < 0) continue;
      stats.add("endless_headers", send_and_read_status(fd, chat_head, line, 100000, stop));
      close(fd);
    }
  });
  // 40 connections dripping one header line every 2 s.
  for (int d = 0; d < 40; ++d) {
    threads.emplace_back([=, &stop, &stats] {
      while (!stop) {
        int fd = connect_from(src, host, port);
        if (fd < 0) continue;
        send(fd, chat_head.data(), chat_head.size(), MSG_NOSIGNAL);
        int status = 0;
        while (!stop) {
          for (int t = 0; t < 20 && !stop; ++t) std::this_thread::sleep_for(std::chrono::milliseconds(100));
          char buf[256];
          ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
          if (n > 0) status = std::atoi(buf + 9);
          if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) break;  // answered or closed
          if (send(fd, "X-Drip: 1\r\n", 11, MSG_NOSIGNAL) < 0) break;
        }
        stats.add("dripping_headers", status);
        close(fd);
      }
    });
  }
  // A schema whose masks are pathologically expensive (an anyOf of 3,000 string patterns): the
  // server's mask budget must end it with 400 instead of letting it hold a slot.
  threads.emplace_back([=, &stop, &stats] {
    json any = json::array();
    for (int i = 0; i < 3000; ++i) any.push_back({{"type", "string"}, {"pattern", "^a" + std::to_string(i) + "[a-z]{2,9}b$"}});
    json body = {{"messages", {{{"role", "user"}, {"content", "pick one"}}}},
                 {"max_tokens", 60},
                 {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", {{"anyOf", any}}}}}}}};
    const std::string text = body.dump();
    while (!stop) {
      int fd = connect_from(src, host, port);
      if (fd < 0) continue;
      timeval tv{120, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      const std::string req = chat_head + "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
      send(fd, req.data(), req.size(), MSG_NOSIGNAL);
      char buf[64] = {};
      ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
      stats.add("pathological_schema", n > 12 ? std::atoi(buf + 9) : 0);
      close(fd);
    }
  });
  // Issue #28's attacks, each paced like the floods: a 1 MiB body of 131k keys (quadratic to
  // parse before; "n": 2 makes it a 400 once parsed), the top_p that crashed the server, a
  // DNS-rebinding Host, a text/plain CSRF body, and with --bomb-image an image that decodes to
  // hundreds of MB (once, and 16 times with detail: high, past the context).
  auto post_status = [](int fd, const std::string& req) {
    timeval tv{60, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (std::size_t sent = 0; sent < req.size();) {
      const ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    char buf[64] = {};
    const ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    return n > 12 ? std::atoi(buf + 9) : 0;
  };
  std::vector<std::pair<std::string, std::string>> issue28;  // attack -> whole request
  auto with_body = [&](const std::string& head, const std::string& body) {
    return head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  {
    std::string keys = "{";
    for (int i = 0; i < 131072; ++i) {
      keys += (i ? ",\"" : "\"");
      for (int v = i, k = 0; k < 4; ++k, v /= 26) keys += static_cast<char>('a' + v % 26);
      keys += "\":0";
    }
    keys += "}";
    issue28.emplace_back("quadratic_body", with_body(chat_head, R"({"n":2,"messages":[{"role":"user","content":"x"}],"junk":)" + keys + "}"));
    issue28.emplace_back("sampler_crash", with_body(chat_head, R"({"messages":[{"role":"user","content":"x"}],"top_p":1e-46,"max_tokens":2})"));
    const std::string plain = R"({"messages":[{"role":"user","content":"x"}],"max_tokens":2})";
    issue28.emplace_back("foreign_host", with_body("POST /v1/chat/completions HTTP/1.1\r\nHost: rebind.example\r\nContent-Type: application/json\r\n", plain));
    issue28.emplace_back("text_plain_csrf", with_body("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n", plain));
    if (!bomb_image.empty()) {
      std::ifstream in(bomb_image, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const std::string url = "data:image/png;base64," + base64_encode(bytes);
      json one = {{"max_tokens", 2}, {"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", {{"url", url}}}}}}}}}};
      issue28.emplace_back("image_bomb", with_body(chat_head, one.dump()));
      json many = json::array();
      for (int i = 0; i < 16; ++i) many.push_back({{"type", "image_url"}, {"image_url", {{"url", url}, {"detail", "high"}}}});
      json sixteen = {{"max_tokens", 2}, {"messages", {{{"role", "user"}, {"content", many}}}}};
      issue28.emplace_back("sixteen_high_images", with_body(chat_head, sixteen.dump()));
    }
  }
  for (const auto& [name, req] : issue28) {
    threads.emplace_back([=, &stop, &stats] {
      Pacer pace(rate > 0 ? std::min(rate, 2.0) : 2.0);  // at most 2/s each: they cost the server real work
      while (pace.wait(stop)) {
        int fd = connect_from(src, host, port);
        if (fd < 0) continue;
        stats.add(name, post_status(fd, req));
        close(fd);
      }
    });
  }
  // Idle connections: opened, never used, reopened when the server closes them.
  threads.emplace_back([=, &stop, &stats] {
    std::vector<int> fds;
    while (!stop) {
      while (static_cast<int>(fds.size()) < idle_connections && !stop) {
        int fd = connect_from(src, host, port);
        if (fd < 0) break;
        fds.push_back(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      for (std::size_t i = 0; i < fds.size();) {
        char c;
        ssize_t n = recv(fds[i], &c, 1, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN)) {
          stats.add("idle_connection", 0);  // closed by the server
          close(fds[i]);
          fds[i] = fds.back();
          fds.pop_back();
        } else {
          ++i;
        }
      }
    }
    for (int fd : fds) close(fd);
  });
  return threads;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t idx = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(idx, v.size() - 1)];
}

int slots_active(const std::string& host, int port) {
  httplib::Client c(host, port);
  auto h = c.Get("/health");
  if (!h) return -1;
  const json j = json::parse(h->body, nullptr, false);
  return j.is_object() ? j.value("slots_active", -1) : -1;
}

// --throughput (load_test_stream.h).
int run_throughput(const std::string& host, int port, int pid, int clients, int requests, int max_tokens,
                   bool disconnect_check, const std::string& json_out) {
  load_test::stream_once(host, port, load_test::throughput_body(-1, 4));  // warm-up: tower, caches, pages
  const long rss_before = pid ? rss_kib(pid) : -1;
  std::mutex mu;
  std::vector<load_test::StreamOutcome> outcomes;
  std::atomic<int> next{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < requests; i = next++) {
        auto o = load_test::stream_once(host, port, load_test::throughput_body(i, max_tokens));
        std::lock_guard lock(mu);
        outcomes.push_back(o);
      }
    });
  }
  for (auto& th : threads) th.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> ttft;
  long tokens = 0;
  int bad = 0;
  for (const auto& o : outcomes) {
    if (o.status != 200 || o.ttft_s < 0) {
      ++bad;
      continue;
    }
    ttft.push_back(o.ttft_s);
    tokens += o.completion_tokens;
  }
  json report = {{"clients", clients}, {"requests", outcomes.size()}, {"max_tokens", max_tokens}, {"wall_s", wall},
                 {"completion_tokens", tokens}, {"aggregate_tok_s", static_cast<double>(tokens) / wall},
                 {"ttft_p50_s", percentile(ttft, 0.5)}, {"ttft_p99_s", percentile(ttft, 0.99)}, {"failed", bad},
                 {"rss_kib_before", rss_before}, {"rss_kib_after", pid ? rss_kib(pid) : -1}};
  std::printf("load_test --throughput: %d clients, %zu streamed requests of %d tokens, %.2f s wall\n", clients,
              outcomes.size(), max_tokens, wall);
  std::printf("aggregate %.2f tok/s (%ld completion tokens), TTFT p50 %.3f s, p99 %.3f s, failed %d\n",
              static_cast<double>(tokens) / wall, tokens, percentile(ttft, 0.5), percentile(ttft, 0.99), bad);
  if (disconnect_check) {
    // A stream long enough to still be running when we hang up.
    auto o = load_test::stream_once(host, port, load_test::throughput_body(requests, 4 * max_tokens + 64), true);
    const auto hung_up = Clock::now();
    double freed = -1;
    while (std::chrono::duration<double>(Clock::now() - hung_up).count() < 30) {
      if (slots_active(host, port) == 0) {
        freed = std::chrono::duration<double>(Clock::now() - hung_up).count();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    report["disconnect"] = {{"first_token_s", o.ttft_s}, {"row_freed_after_s", freed}};
    std::printf("disconnect: hung up after the first token (%.3f s); no active slot %.3f s later%s\n", o.ttft_s, freed,
                freed < 0 ? " (NOT FREED within 30 s)" : "");
    if (freed < 0) ++bad;
  }
  if (!json_out.empty()) std::ofstream(json_out) << report.dump(2) << "\n";
  return bad == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Bounded load test for ringlm serve"};
  std::string host = "127.0.0.1";
  int port = 8080, pid = 0, requests = 300, clients = 16, warmup = 32, rounds = 1;
  std::size_t max_body = 1 << 20;
  unsigned seed = 1;
  std::string json_out;
  app.add_option("--host", host);
  app.add_option("--port", port)->required();
  app.add_option("--pid", pid, "Server pid (for RSS)");
  app.add_option("--requests", requests, "Requests per round");
  app.add_option("--rounds", rounds, "Rounds of --requests (RSS is reported after each)");
  app.add_option("--clients", clients);
  app.add_option("--warmup", warmup, "Plain requests before the RSS baseline");
  app.add_option("--max-body", max_body, "The server's --max-body (oversized bodies exceed it)");
  app.add_option("--seed", seed);
  app.add_option("--json", json_out, "Write the report as JSON here too");
  bool attacks = false;
  int idle_connections = 500;
  int settle = 0;
  app.add_flag("--attacks", attacks, "Mix hostile clients into the load (from 127.0.0.2): chunked and gzip bodies "
               "over the limit, endless and dripping headers, idle connections");
  app.add_option("--idle-connections", idle_connections, "Idle connections the attack keeps open");
  double attack_rate = 0;
  app.add_option("--attack-rate", attack_rate,
                 "With --attacks: new connections per second for each flooding attacker (chunked, gzip, endless "
                 "headers), so runs face the same volume (0: as fast as the server answers; gzip every 20 ms)");
  std::string bomb_image;
  app.add_option("--bomb-image", bomb_image,
                 "With --attacks: a PNG that decodes to hundreds of MB (e.g. convert -size 9459x9459 xc:white -depth 1 "
                 "bomb.png), sent once and 16 times with detail: high");
  app.add_option("--settle", settle, "Seconds to wait idle after the load before a last RSS reading (0: none)");
  bool throughput = false, disconnect_check = false;
  int max_tokens = 32;
  app.add_flag("--throughput", throughput,
               "Streaming clients only (--clients, --requests in all, --max-tokens each): aggregate tok/s and TTFT p50/p99");
  app.add_option("--max-tokens", max_tokens, "With --throughput: tokens per request")->capture_default_str();
  app.add_flag("--disconnect-check", disconnect_check,
               "With --throughput: then hang up one stream after its first token and time until no slot is active");
  CLI11_PARSE(app, argc, argv);
  if (host != "127.0.0.1" && host != "localhost") {
    std::fprintf(stderr, "load_test: loopback only\n");
    return 2;
  }
  if (throughput) return run_throughput(host, port, pid, clients, requests, max_tokens, disconnect_check, json_out);

  auto client = [&] {
    auto c = std::make_unique<httplib::Client>(host, port);
    c->set_read_timeout(120);
    c->set_connection_timeout(5);
    c->set_keep_alive(true);
    return c;
  };
  {
    auto c = client();
    for (int i = 0; i < warmup; ++i) c->Post("/v1/chat/completions", chat_body(i, i % 2, false).dump(), "application/json");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long rss_before = pid ? rss_kib(pid) : -1;

  std::mutex mu;
  std::vector<Outcome> outcomes;
  std::vector<long> rss_rounds;
  const std::string oversized = "{\"messages\":[{\"role\":\"user\",\"content\":\"" + std::string(max_body + 1024, 'a') + "\"}]}";
  std::atomic<bool> stop_attacks{false};
  Clock::time_point attack_start{}, attack_end{};
  AttackStats attack_stats;
  std::vector<std::thread> attackers;
  if (attacks) {
    attackers = start_attacks(host, port, max_body, idle_connections, attack_rate, bomb_image, stop_attacks, attack_stats);
    attack_start = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(2));  // let the attacks take hold first
  }
  const auto t0 = Clock::now();
  for (int round = 0; round < rounds; ++round) {
    std::atomic<int> next{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < clients; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(seed * 7919u + static_cast<unsigned>(t) + 104729u * static_cast<unsigned>(round));
        auto c = client();
        for (int i = next++; i < requests; i = next++) {
          const Kind kind = pick_kind(rng);
          const auto start = Clock::now();
          int status = 0;
          if (kind == Kind::Disconnect) {
            status = hang_up_mid_stream(host, port, i);
          } else {
            std::string path = kind == Kind::Completion ? "/v1/completions" : "/v1/chat/completions";
            std::string body;
            switch (kind) {
              case Kind::Plain: body = chat_body(i, false, false).dump(); break;
              case Kind::Streamed: body = chat_body(i, true, false).dump(); break;
              case Kind::JsonSchema: body = chat_body(i, (i % 2) == 0, true).dump(); break;
              case Kind::Completion: body = json({{"prompt", "Once upon a time " + std::to_string(i)}, {"max_tokens", 32}}).dump(); break;
              case Kind::Malformed: body = "{\"messages\": [ {\"role\": \"user\", \"content\": \"unterminated"; break;
              case Kind::Oversized: body = oversized; break;
              default: break;
            }
            // A fresh connection for bodies the server refuses unread (it may close on us).
            auto own = kind == Kind::Oversized ? client() : nullptr;
            auto res = (own ? *own : *c).Post(path.c_str(), body, "application/json");
            status = res ? res->status : 0;
            if (res && status == 200 && (kind == Kind::Streamed || (kind == Kind::JsonSchema && i % 2 == 0)) &&
                res->body.find("data: [DONE]") == std::string::npos) {
              status = 0;  // a stream that did not finish properly
            }
            if (!res) c = client();
          }
          const double s = std::chrono::duration<double>(Clock::now() - start).count();
          std::lock_guard lock(mu);
          outcomes.push_back({kind, status, s});
        }
      });
    }
    for (auto& th : threads) th.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (pid) rss_rounds.push_back(rss_kib(pid));
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  stop_attacks = true;
  for (auto& th : attackers) th.join();
  attack_end = Clock::now();
  if (attacks) std::this_thread::sleep_for(std::chrono::seconds(1));

  // Let cancelled generations wind down, then look for anything left held.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  json health;
  std::string kv_line, cancelled_line, rejected_line;
  {
    auto c = client();
    if (auto h = c->Get("/health")) health = json::parse(h->body, nullptr, false);
    if (auto m = c->Get("/metrics")) {
      auto line = [&](const std::string& name) {
        auto pos = m->body.find("\n" + name + " ");
        return pos == std::string::npos ? std::string() : m->body.substr(pos + 1, m->body.find('\n', pos + 1) - pos - 1);
      };
      kv_line = line("ringlm_kv_tokens_used");
      cancelled_line = line("ringlm_generations_cancelled_total");
      rejected_line = line("ringlm_queue_rejections_total");
    }
  }
  const long rss_after = pid ? rss_kib(pid) : -1;
  // RSS once the server has been idle for --settle seconds: connection threads exit after
  // their idle timeout and return their heap, so this is what the load left behind for good.
  long rss_settled = -1;
  if (pid && settle > 0) {
    std::this_thread::sleep_for(std::chrono::seconds(settle));
    rss_settled = rss_kib(pid);
  }

  // Expected statuses per kind.
  std::map<std::string, std::map<int, int>> by_kind;
  std::map<std::string, std::vector<double>> lat;
  std::vector<double> all_ok;
  int unexpected = 0;
  for (const auto& o : outcomes) {
    by_kind[kind_name(o.kind)][o.status]++;
    bool ok;
    switch (o.kind) {
      case Kind::Malformed: ok = o.status == 400; break;
      case Kind::Oversized: ok = o.status == 413; break;
      case Kind::Disconnect: ok = o.status == -1 || o.status == 429; break;
      default: ok = o.status == 200 || o.status == 429; break;
    }
    if (!ok) ++unexpected;
    if (o.status == 200) {
      lat[kind_name(o.kind)].push_back(o.seconds);
      all_ok.push_back(o.seconds);
    }
  }
  auto pct = [](std::vector<double> v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    std::size_t idx = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(idx, v.size() - 1)];
  };
  json report = {{"requests", outcomes.size()}, {"clients", clients}, {"wall_s", wall},
                 {"p50_s", pct(all_ok, 0.5)}, {"p99_s", pct(all_ok, 0.99)}, {"unexpected", unexpected},
                 {"rss_kib_before", rss_before}, {"rss_kib_after", rss_after}, {"rss_kib_settled", rss_settled}, {"rss_kib_after_each_round", rss_rounds}, {"health_after", health}, {"kv_after", kv_line},
                 {"cancelled", cancelled_line}, {"queue_rejections", rejected_line}};
  std::printf("load_test: %zu requests, %d clients, %.2f s wall (%.1f req/s)\n", outcomes.size(), clients, wall,
              static_cast<double>(outcomes.size()) / wall);
  std::printf("%-22s %8s %8s   statuses (-1 = client hung up on purpose, 0 = transport error)\n", "kind", "p50 ms", "p99 ms");  // latencies of the 200s
  for (auto& [kind, statuses] : by_kind) {
    std::string s;
    for (auto& [code, n] : statuses) s += std::to_string(code) + ":" + std::to_string(n) + " ";
    std::printf("%-22s %8.1f %8.1f   %s\n", kind.c_str(), pct(lat[kind], 0.5) * 1e3, pct(lat[kind], 0.99) * 1e3, s.c_str());
    json st;
    for (auto& [code, n] : statuses) st[std::to_string(code)] = n;
    report["by_kind"][kind] = {{"statuses", st}, {"p50_s", pct(lat[kind], 0.5)}, {"p99_s", pct(lat[kind], 0.99)}};
  }
  std::printf("all 200s: p50 %.1f ms, p99 %.1f ms\n", pct(all_ok, 0.5) * 1e3, pct(all_ok, 0.99) * 1e3);
  if (pid) {
    std::printf("server RSS: %ld KiB before, %ld KiB after (%+ld KiB); after each round:", rss_before, rss_after,
                rss_after - rss_before);
    for (long r : rss_rounds) std::printf(" %ld", r);
    std::printf(" KiB\n");
    if (rss_settled >= 0)
      std::printf("server RSS after %d s idle: %ld KiB (%+ld KiB from before)\n", settle, rss_settled,
                  rss_settled - rss_before);
  }
  std::printf("after: %s; %s; %s; %s\n", health.dump().c_str(), kv_line.c_str(), cancelled_line.c_str(),
              rejected_line.c_str());
  if (attacks) {
    // Attempts per second show the volume each attacker reached (paced or not), so two runs
    // can be checked for like-for-like before their latencies are compared.
    const double attack_s = std::chrono::duration<double>(attack_end - attack_start).count();
    std::printf("attacks over %.1f s (status:count, 0 = connection closed by the server; attempts/s):\n", attack_s);
    report["attack_seconds"] = attack_s;
    report["attack_rate"] = attack_rate;
    for (auto& [attack, statuses] : attack_stats.outcomes) {
      std::string s;
      long attempts = 0;
      for (auto& [code, n] : statuses) {
        s += std::to_string(code) + ":" + std::to_string(n) + " ";
        attempts += n;
      }
      const double per_s = attack_s > 0 ? static_cast<double>(attempts) / attack_s : 0.0;
      std::printf("  %-20s %-40s %.1f/s\n", attack.c_str(), s.c_str(), per_s);
      json st;
      for (auto& [code, n] : statuses) st[std::to_string(code)] = n;
      report["attacks"][attack] = st;
      report["attacks_per_second"][attack] = per_s;
    }
  }
  std::printf("unexpected statuses: %d\n", unexpected);
  if (!json_out.empty()) std::ofstream(json_out) << report.dump(2) << "\n";

  // Idle slots of the batched loop keep their last prompt's KV for prefix reuse, so KV tokens
  // in use after the load are a cache, bounded by the capacity, not a held session; a leak is
  // a sequence still active or queued (and RSS that keeps climbing over --rounds).
  const bool leaked = !health.is_object() || health.value("slots_active", -1) != 0 || health.value("queue_depth", -1) != 0;
  if (leaked) std::printf("LEAK: the server still holds a session after the load\n");
  return unexpected == 0 && !leaked ? 0 : 1;
}
