// Issue #28, media under a budget: what the media's headers tell is checked before anything
// is decoded (limits, the prompt's token count against the context), and decoding/encoding
// runs under a process-wide memory budget and concurrency limit (413 / 429), visible in
// /metrics. On the fake backend, whose media "encoding" holds the planned bytes for a while.
#include <future>

#include "server_fixture.h"

namespace ringlm::server::testing {
namespace {

// A PNG signature and IHDR chunk for a w x h 1-bit grey image: all the header probe reads
// (a decoder would fail on the missing data, which is the point: nothing may decode it).
std::string png_header(std::uint32_t w, std::uint32_t h) {
  std::string s("\x89PNG\r\n\x1a\n", 8);
  s += std::string("\0\0\0\x0d", 4) + "IHDR";
  for (std::uint32_t v : {w, h})
    for (int shift = 24; shift >= 0; shift -= 8) s += static_cast<char>((v >> shift) & 0xff);
  s += std::string("\x01\x00\x00\x00\x00", 5) + std::string("\0\0\0\0", 4);  // depth 1, grey; CRC unchecked
  return s;
}

std::string base64(const std::string& in) {
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

json with_images(int n, std::uint32_t w, std::uint32_t h) {
  json parts = json::array();
  for (int i = 0; i < n; ++i)
    parts.push_back({{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + base64(png_header(w, h))}}}});
  parts.push_back({{"type", "text"}, {"text", "what is it?"}});
  return {{"messages", json::array({{{"role", "user"}, {"content", parts}}})}, {"max_tokens", 4}};
}

class MediaBudgetTest : public ServerTest {
 protected:
  void start_with(std::size_t budget_bytes, int concurrent, int delay_ms = 0, int tokens = 64, int ctx = 4096) {
    FakeBackendOptions fo;
    fo.media = true;
    fo.media_tokens = tokens;
    fo.media_delay = std::chrono::milliseconds(delay_ms);
    fo.context_length = ctx;
    ServerOptions so;
    so.media_budget.max_bytes = budget_bytes;
    so.media_budget.max_concurrent = concurrent;
    start(fo, so);
  }
  double metric(const std::string& name) {
    const std::string text = request("GET", "/metrics").body;
    const std::size_t at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::atof(text.c_str() + at + name.size() + 2);
  }
};

TEST_F(MediaBudgetTest, ContextLengthExceededIsAnsweredBeforeAnyDecoding) {
  start_with(64u << 20, 2, 0, /*tokens=*/300, /*ctx=*/1000);
  auto e = expect_error(post("/v1/chat/completions", with_images(4, 32, 32)), 400);
  EXPECT_EQ(e["code"], "context_length_exceeded");
  EXPECT_EQ(backend_->media_encodes(), 0);
  EXPECT_EQ(post("/v1/chat/completions", with_images(2, 32, 32)).status, 200);
  EXPECT_EQ(backend_->media_encodes(), 1);
}

TEST_F(MediaBudgetTest, PixelLimitsComeFromTheHeaderAlone) {
  start_with(64u << 20, 2);
  // 9500 x 9500 is over the 89.5 M pixel limit: refused from 33 bytes of header.
  auto e = expect_error(post("/v1/chat/completions", with_images(1, 9500, 9500)), 400);
  EXPECT_EQ(e["param"], "messages[0].content[0].image_url.url");
  EXPECT_NE(e["message"].get<std::string>().find("pixels"), std::string::npos) << e;
  EXPECT_EQ(backend_->media_encodes(), 0);
}

TEST_F(MediaBudgetTest, ARequestThatCanNeverFitIs413) {
  start_with(1u << 20, 2);
  auto e = expect_error(post("/v1/chat/completions", with_images(1, 1000, 1000)), 413);  // 3 MB decoded
  EXPECT_EQ(e["code"], "media_too_large");
  EXPECT_NE(e["message"].get<std::string>().find("--media-memory-mb"), std::string::npos);
  EXPECT_EQ(backend_->media_encodes(), 0);
  EXPECT_EQ(post("/v1/chat/completions", with_images(1, 100, 100)).status, 200);  // 30 KB fits
  EXPECT_EQ(metric("ringlm_media_refused_total"), 1);
}

TEST_F(MediaBudgetTest, MediaWorkBeyondTheLimitIs429AndMetricsShowItsBytes) {
  start_with(64u << 20, /*concurrent=*/1, /*delay_ms=*/1500);
  EXPECT_EQ(metric("ringlm_media_bytes_in_use"), 0);
  EXPECT_EQ(metric("ringlm_media_max_bytes"), static_cast<double>(64u << 20));
  auto first = std::async(std::launch::async, [&] { return post("/v1/chat/completions", with_images(1, 1000, 1000)).status; });
  ASSERT_TRUE(eventually([&] { return metric("ringlm_media_bytes_in_use") == 3000000; }));
  EXPECT_EQ(metric("ringlm_media_active"), 1);
  httplib::Client c("127.0.0.1", port_);
  auto busy = c.Post("/v1/chat/completions", with_images(1, 10, 10).dump(), "application/json");
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->status, 429);
  EXPECT_EQ(busy->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(busy->body)["error"]["code"], "media_busy");
  EXPECT_EQ(first.get(), 200);
  EXPECT_EQ(metric("ringlm_media_bytes_in_use"), 0);
  EXPECT_EQ(metric("ringlm_media_active"), 0);
  EXPECT_EQ(post("/v1/chat/completions", with_images(1, 10, 10)).status, 200);
  EXPECT_EQ(backend_->media_encodes(), 2);
}

// A request the queue would refuse is refused before its media are decoded.
TEST_F(MediaBudgetTest, AFullQueueRefusesBeforeDecoding) {
  FakeBackendOptions fo;
  fo.media = true;
  fo.slots = 1;
  fo.token_delay = std::chrono::milliseconds(300);
  ServerOptions so;
  so.queue = 0;
  start(fo, so);
  auto busy = std::async(std::launch::async, [&] { return post("/v1/chat/completions", chat("long", {{"max_tokens", 5}})).status; });
  ASSERT_TRUE(eventually([&] { return server_->scheduler().active() == 1; }));
  EXPECT_EQ(expect_error(post("/v1/chat/completions", with_images(1, 10, 10)), 429)["code"], "queue_full");
  EXPECT_EQ(backend_->media_encodes(), 0);
  EXPECT_EQ(busy.get(), 200);
}

}  // namespace
}  // namespace ringlm::server::testing
