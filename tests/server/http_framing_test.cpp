// http_framing.h as pure functions: head boundaries and limits, header validation, chunked
// decoding fed in arbitrary pieces.
#include "server/http_framing.h"

#include <gtest/gtest.h>

#include <random>

namespace ringlm::server {
namespace {

int status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FramingError& e) {
    return e.status();
  }
  return 0;
}

TEST(HttpFraming, FindsTheHeadEndAndRefusesOversizeHeadsEarly) {
  FramingLimits l;
  const std::string head = "GET / HTTP/1.1\r\nHost: x\r\n\r\nBODY";
  EXPECT_EQ(find_head_end(head, l), head.size() - 4);
  for (std::size_t n = 0; n < head.size() - 4; ++n) EXPECT_EQ(find_head_end(head.substr(0, n), l), 0u) << n;
  EXPECT_EQ(find_head_end("\r\n\r\nGET / HTTP/1.1\n\n", l), 20u);  // leading blank lines, bare LF
  // An unfinished line longer than the limit is refused without waiting for its end.
  EXPECT_EQ(status_of([&] { find_head_end("GET / HTTP/1.1\r\nX: " + std::string(9000, 'a'), l); }), 431);
  EXPECT_EQ(status_of([&] { find_head_end("GET /" + std::string(9000, 'a'), l); }), 414);
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 70; ++i) many += "A: b\r\n";
  EXPECT_EQ(status_of([&] { find_head_end(many, l); }), 431);
  std::string big = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 5; ++i) big += "A: " + std::string(8000, 'x') + "\r\n";
  EXPECT_EQ(status_of([&] { find_head_end(big, l); }), 431);
  EXPECT_EQ(status_of([&] { find_head_end(std::string(40000, '\n'), l); }), 431);
}

TEST(HttpFraming, ParsesFramingHeaders) {
  FramingLimits l;
  RequestHead h = parse_head("POST /v1/x?a=b HTTP/1.1\r\nHost: h\r\ncontent-length:  12 \r\nExpect: 100-Continue\r\n\r\n", l);
  EXPECT_EQ(h.method, "POST");
  EXPECT_EQ(h.target, "/v1/x?a=b");
  EXPECT_EQ(h.content_length, 12u);
  EXPECT_TRUE(h.expect_continue);
  EXPECT_FALSE(h.chunked);
  h = parse_head("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n", l);
  EXPECT_TRUE(h.chunked);
  const std::string n = normalized_head(h, 7);
  EXPECT_EQ(n, "POST / HTTP/1.1\r\nContent-Length: 7\r\n\r\n");

  auto st = [&](const std::string& head) { return status_of([&] { parse_head(head, l); }); };
  EXPECT_EQ(st("POST / HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n"), 413);
  EXPECT_EQ(st("POST / HTTP/1.1\r\nContent-Encoding: gzip\r\n\r\n"), 415);
  EXPECT_EQ(st("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"), 400);
  EXPECT_EQ(st("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(st("POST / HTTP/1.1\r\nTransfer-Encoding: deflate\r\n\r\n"), 501);
  EXPECT_EQ(st("POST / HTTP/1.1\r\nContent-Length: 1,1\r\n\r\n"), 400);
  EXPECT_EQ(st("POST / HTTP/1.1\r\nX: a\x01" "b\r\n\r\n"), 400);
  EXPECT_EQ(st("POST / HTTP/1.1\r\n : empty name\r\n\r\n"), 400);
  EXPECT_EQ(st("POST  / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(st("POST / HTTP/3.0\r\n\r\n"), 505);
  EXPECT_EQ(st("POST / FTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(st("GET / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n"), 417);
}

std::string encode_chunked(const std::string& body, std::mt19937& rng) {
  std::string out;
  std::size_t i = 0;
  while (i < body.size()) {
    std::size_t n = std::min<std::size_t>(body.size() - i, 1 + rng() % 50);
    char size[32];
    std::snprintf(size, sizeof size, rng() % 2 ? "%zx\r\n" : "%zX;ext=1\r\n", n);
    out += size + body.substr(i, n) + "\r\n";
    i += n;
  }
  return out + "0\r\nTrailer: t\r\n\r\n";
}

TEST(HttpFraming, ChunkedDecodingDoesNotDependOnHowBytesArrive) {
  FramingLimits l;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string body(rng() % 400, '\0');
    for (char& c : body) c = static_cast<char>(rng());
    const std::string wire = encode_chunked(body, rng) + "NEXT";
    ChunkedDecoder d(l);
    std::string in, out;
    std::size_t pos = 0;
    while (!d.done() && pos < wire.size()) {
      std::size_t n = 1 + rng() % 17;
      in += wire.substr(pos, n);
      pos += n;
      in.erase(0, d.feed(in, out));
    }
    ASSERT_TRUE(d.done()) << trial;
    EXPECT_EQ(out, body) << trial;
    EXPECT_EQ(in + wire.substr(std::min(pos, wire.size())), "NEXT") << trial;  // nothing past the trailer consumed
  }
}

TEST(HttpFraming, ChunkedLimits) {
  FramingLimits l;
  l.max_body = 100;
  auto st = [&](const std::string& wire) {
    return status_of([&] {
      ChunkedDecoder d(l);
      std::string out;
      d.feed(wire, out);
    });
  };
  EXPECT_EQ(st("65\r\n"), 413);                            // 101 > 100, refused before any data
  EXPECT_EQ(st("50\r\n" + std::string(80, 'a') + "\r\n20\r\n"), 413);  // 80 + 32 > 100
  EXPECT_EQ(st("ffffffffffffffffff\r\n"), 413);            // no overflow
  EXPECT_EQ(st("zz\r\n"), 400);
  EXPECT_EQ(st("5\r\nabcdeXX"), 400);                      // data not followed by CRLF
  EXPECT_EQ(st("1;" + std::string(9000, 'e')), 400);       // endless size line
  std::string trailer = "0\r\n";
  for (int i = 0; i < 70; ++i) trailer += "T: x\r\n";
  EXPECT_EQ(st(trailer), 431);
  EXPECT_EQ(st("5\r\nabcde\r\n0\r\n\r\n"), 0);
}

}  // namespace
}  // namespace ringlm::server
