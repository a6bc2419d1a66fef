// Shared helpers for the HTTP server tests: an HttpServer over the fake backend on an ephemeral
// loopback port, a JSON client, an SSE parser and a raw socket for clients that walk away.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "server/fake_backend.h"
#include "server/http_server.h"

namespace ringlm::server::testing {

using nlohmann::json;

struct HttpReply {
  int status = 0;
  std::string body;
  json j;  // body parsed as JSON when it is JSON
};

class ServerTest : public ::testing::Test {
 protected:
  void start(FakeBackendOptions fo = {}, ServerOptions so = {}) {
    backend_ = std::make_unique<FakeBackend>(fo);
    so.host = "127.0.0.1";
    so.port = 0;
    if (so.shutdown_grace == std::chrono::milliseconds(10000)) so.shutdown_grace = std::chrono::milliseconds(3000);
    // Tests open connections faster than any client should; the rate limit has its own test.
    if (so.connection_rate_per_client == ServerOptions{}.connection_rate_per_client) so.connection_rate_per_client = 0;
    server_ = std::make_unique<HttpServer>(*backend_, so);
    port_ = server_->start();
  }

  void TearDown() override {
    if (server_) {
      server_->stop();
      server_->wait();
    }
  }

  HttpReply request(const std::string& method, const std::string& path, const std::string& body = "") {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(20);
    c.set_connection_timeout(5);
    httplib::Result r = method == "GET"      ? c.Get(path.c_str())
                        : method == "DELETE" ? c.Delete(path.c_str())
                                             : c.Post(path.c_str(), body, "application/json");
    HttpReply out;
    if (!r) {
      ADD_FAILURE() << "no HTTP response for " << method << " " << path << ": " << httplib::to_string(r.error());
      return out;
    }
    out.status = r->status;
    out.body = r->body;
    out.j = json::parse(out.body, nullptr, false);
    return out;
  }

  HttpReply post(const std::string& path, const json& body) { return request("POST", path, body.dump()); }

  // "data: ..." payloads of an SSE body, in order ("[DONE]" kept as a string).
  static std::vector<std::string> sse_payloads(const std::string& body) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < body.size()) {
      std::size_t end = body.find("\n\n", pos);
      if (end == std::string::npos) end = body.size();
      std::string event = body.substr(pos, end - pos);
      if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
      pos = end + 2;
    }
    return out;
  }

  // Checks the OpenAI error shape and returns the error object.
  static json expect_error(const HttpReply& r, int status) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_TRUE(r.j.is_object() && r.j.contains("error")) << r.body;
    if (!r.j.is_object() || !r.j.contains("error")) return json::object();
    const json& e = r.j["error"];
    EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.body;
    EXPECT_TRUE(e["type"].is_string()) << r.body;
    EXPECT_TRUE(e.contains("param") && (e["param"].is_null() || e["param"].is_string())) << r.body;
    EXPECT_TRUE(e.contains("code") && (e["code"].is_null() || e["code"].is_string())) << r.body;
    return e;
  }

  // A client that sends `body` to `path` over a raw socket and can hang up at will.
  int raw_connect_and_send(const std::string& path, const std::string& body) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port_));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body;
    EXPECT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    return fd;
  }

  // Reads from a raw socket until `needle` appears (or ~5 s pass); returns what was read.
  static std::string read_until(int fd, const std::string& needle) {
    std::string got;
    char buf[4096];
    timeval tv{0, 100 * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (int i = 0; i < 50 && got.find(needle) == std::string::npos; ++i) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n > 0) got.append(buf, static_cast<std::size_t>(n));
      if (n == 0) break;
    }
    return got;
  }

  // Polls `pred` until it holds or `timeout_ms` of wall time pass. The default is generous: it
  // costs nothing when the state comes, and a loaded CI host (ctest -j2 on 2 cores, or ASan)
  // can take seconds to get there.
  template <typename Pred>
  static bool eventually(Pred pred, int timeout_ms = 20000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pred();
  }

  static json chat(const std::string& user, json extra = json::object()) {
    json body = {{"model", "ringlm-fake"}, {"messages", json::array({{{"role", "user"}, {"content", user}}})}};
    body.update(extra);
    return body;
  }

  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

}  // namespace ringlm::server::testing
