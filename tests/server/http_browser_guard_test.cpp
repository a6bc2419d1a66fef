// Issue #28, "a good citizen on localhost": log lines cannot be forged, a keyless server
// answers only Host names a DNS rebinding cannot produce and only JSON bodies (no
// simple-request CSRF), the page carries a CSP and X-Frame-Options, the bearer scheme is
// case-insensitive.
#include "server/access.h"
#include "server/browser_guard.h"
#include "server_fixture.h"

namespace ringlm::server::testing {
namespace {

class BrowserGuard : public ServerTest {
 protected:
  // Sends `head` (request line and headers, without the final CRLF) plus `body`; returns the
  // whole response text.
  std::string raw(const std::string& head, const std::string& body = "") {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port_));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    std::string req = head + "Connection: close\r\n";
    if (!body.empty()) req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    req += "\r\n" + body;
    EXPECT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    std::string got = read_until(fd, "\r\n\r\n{");  // headers and the start of a JSON body
    std::string more = read_until(fd, "\n\n\n");    // the rest, until the server closes
    close(fd);
    return got + more;
  }
  static int status_of(const std::string& response) {
    return response.size() > 12 ? std::atoi(response.c_str() + 9) : 0;
  }
  int post_with(const std::string& host, const std::string& content_type, const std::string& auth = "") {
    std::string head = "POST /v1/chat/completions HTTP/1.1\r\n";
    if (!host.empty()) head += "Host: " + host + "\r\n";
    if (!content_type.empty()) head += "Content-Type: " + content_type + "\r\n";
    if (!auth.empty()) head += "Authorization: " + auth + "\r\n";
    return status_of(raw(head, chat("hi", {{"max_tokens", 2}}).dump()));
  }
};

TEST(LogEscape, ControlCharactersAndBackslashesBecomeHex) {
  EXPECT_EQ(escape_for_log("/x\nringlm serve: 127.0.0.1 GET /ok 200\x1b[31m", 200),
            "/x\\x0aringlm serve: 127.0.0.1 GET /ok 200\\x1b[31m");
  EXPECT_EQ(escape_for_log("a\r\tb\\c\x7f\xc2\x9b", 200), "a\\x0d\\x09b\\x5cc\\x7f\\xc2\\x9b");
  EXPECT_EQ(escape_for_log(std::string(300, 'a'), 10), std::string(10, 'a') + "...");
}

// The request: GET /x%0a<forged line>%1b[31m wrote CR/LF/ESC raw to stderr, also on a 401.
TEST_F(BrowserGuard, AccessLogLinesCannotBeForged) {
  for (const char* key : {"", "secret"}) {
    ServerOptions so;
    so.access_log = true;
    so.api_key = key;
    if (server_) {
      server_->stop();
      server_->wait();
    }
    ::testing::internal::CaptureStderr();
    start({}, so);
    const std::string r = raw("GET /v1/models/x%0d%0aringlm%20serve:%20127.0.0.1%20GET%20/forged%20200%1b[31m HTTP/1.1\r\nHost: localhost\r\n");
    EXPECT_EQ(status_of(r), *key ? 401 : 404) << r;
    server_->stop();
    server_->wait();
    server_.reset();
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
    EXPECT_EQ(log.find('\r'), std::string::npos) << log;
    EXPECT_EQ(log.find("\nringlm serve: 127.0.0.1 GET /forged"), std::string::npos) << log;
    EXPECT_NE(log.find("/v1/models/x\\x0d\\x0aringlm serve"), std::string::npos) << log;
  }
}

TEST(HostCheck, NamesARebindingCannotProduce) {
  const HostPolicy local{"127.0.0.1", {}};
  for (const char* ok : {"localhost", "localhost:8080", "LOCALHOST.", "app.localhost:1", "127.0.0.1:8080", "127.0.0.5",
                         "[::1]:8080", "[::1]", "::1", "192.168.1.20:8080", "[fe80::1]:80", ""})
    EXPECT_TRUE(host_allowed(ok, local)) << ok;
  for (const char* bad : {"evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io",
                          "[::1", "localhost:8080:1", "box.lan"})
    EXPECT_FALSE(host_allowed(bad, local)) << bad;
  EXPECT_TRUE(host_allowed("box.lan:8080", {"0.0.0.0", {"box.lan"}}));
  EXPECT_TRUE(host_allowed("Box.Lan", {"box.lan", {}}));  // --host given as a name
  EXPECT_TRUE(host_allowed("anything.example", {"0.0.0.0", {"*"}}));
  EXPECT_EQ(host_name_of(" [::1]:80 "), "::1");
}

TEST(ContentType, OnlyJson) {
  for (const char* ok : {"application/json", "application/json; charset=utf-8", "Application/JSON", " application/json ;x=y",
                         "application/vnd.api+json"})
    EXPECT_TRUE(is_json_content_type(ok)) << ok;
  for (const char* bad : {"", "text/plain", "text/plain;charset=UTF-8", "multipart/form-data; boundary=x",
                          "application/x-www-form-urlencoded", "application/jsonx", "text/json+x"})
    EXPECT_FALSE(is_json_content_type(bad)) << bad;
}

TEST_F(BrowserGuard, KeylessServerRefusesForeignHostsAndNonJsonBodies) {
  start();
  EXPECT_EQ(post_with("localhost:" + std::to_string(port_), "application/json"), 200);
  EXPECT_EQ(post_with("[::1]:" + std::to_string(port_), "application/json; charset=utf-8"), 200);
  EXPECT_EQ(post_with("", "application/json"), 200);  // HTTP/1.0-style: no Host
  // DNS rebinding: the page's own name arrives as Host; every route refuses it, the page too.
  EXPECT_EQ(post_with("attacker.example", "application/json"), 403);
  EXPECT_EQ(status_of(raw("GET / HTTP/1.1\r\nHost: attacker.example:" + std::to_string(port_) + "\r\n")), 403);
  EXPECT_EQ(status_of(raw("GET /v1/models HTTP/1.1\r\nHost: attacker.example\r\n")), 403);
  // Simple-request CSRF: what a browser sends cross-origin without a preflight.
  EXPECT_EQ(post_with("localhost", "text/plain"), 415);
  EXPECT_EQ(post_with("localhost", "text/plain;charset=UTF-8"), 415);
  EXPECT_EQ(post_with("localhost", "multipart/form-data; boundary=x"), 415);
  EXPECT_EQ(post_with("localhost", "application/x-www-form-urlencoded"), 415);
  EXPECT_EQ(post_with("localhost", ""), 415);
  EXPECT_EQ(backend_->generations(), 3);  // none of the refused ones reached the backend
}

TEST_F(BrowserGuard, AllowedHostsAndAnApiKeyLiftTheChecks) {
  ServerOptions so;
  so.allowed_hosts = {"box.lan"};
  start({}, so);
  EXPECT_EQ(post_with("box.lan:8080", "application/json"), 200);
  EXPECT_EQ(post_with("other.lan", "application/json"), 403);
  server_->stop();
  server_->wait();
  server_.reset();  // before start() replaces the backend it uses
  so.api_key = "k3y";
  start({}, so);
  // With a key a page cannot call the API anyway: Host and Content-Type are not checked.
  EXPECT_EQ(post_with("other.lan", "text/plain"), 401);
  EXPECT_EQ(post_with("other.lan", "text/plain", "Bearer k3y"), 200);
  EXPECT_EQ(post_with("localhost", "application/json", "bearer k3y"), 200);  // scheme in any case
  EXPECT_EQ(post_with("localhost", "application/json", "BEARER   k3y"), 200);
  EXPECT_EQ(post_with("localhost", "application/json", "Bearerk3y"), 401);
  EXPECT_EQ(post_with("localhost", "application/json", "Basic k3y"), 401);
}

TEST_F(BrowserGuard, ThePageCarriesACspAndCannotBeFramed) {
  start();
  const std::string r = raw("GET / HTTP/1.1\r\nHost: localhost\r\n");
  EXPECT_EQ(status_of(r), 200);
  EXPECT_NE(r.find(std::string("Content-Security-Policy: ") + kPageCsp), std::string::npos) << r.substr(0, 600);
  EXPECT_NE(r.find("X-Frame-Options: DENY"), std::string::npos);
  EXPECT_NE(r.find("frame-ancestors 'none'"), std::string::npos);
  // The page loads its scripts and styles from files (the CSP allows no inline code).
  EXPECT_EQ(r.find("<script>"), std::string::npos);
  EXPECT_EQ(r.find("<style"), std::string::npos);
  EXPECT_EQ(r.find(" style=\""), std::string::npos);
  EXPECT_EQ(r.find(" onclick="), std::string::npos);
}

}  // namespace
}  // namespace ringlm::server::testing
