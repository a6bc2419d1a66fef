// Content parts without a server: what the chat template gets, which media references come
// out, and what is refused (with the part named); local files under --allow-local-media.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "server/api_error.h"
#include "server/content_parts.h"
#include "server/local_media.h"
#include "server/request.h"

namespace ringlm::server {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

json with_content(json content) {
  return {{"messages", {{{"role", "system"}, {"content", "sys"}}, {{"role", "user"}, {"content", std::move(content)}}}}};
}
json image_part(const std::string& url) { return {{"type", "image_url"}, {"image_url", {{"url", url}}}}; }
json audio_part(const std::string& data, const std::string& format) {
  return {{"type", "input_audio"}, {"input_audio", {{"data", data}, {"format", format}}}};
}

// The ApiError a body gets (status 0 when accepted).
ApiError error_of(const json& body) {
  try {
    parse_chat_request(body);
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "accepted");
}

TEST(Base64, DecodesWithAndWithoutPadding) {
  std::string out;
  ASSERT_TRUE(decode_base64("aGVsbG8=", out));
  EXPECT_EQ(out, "hello");
  ASSERT_TRUE(decode_base64("aGVsbG8", out));
  EXPECT_EQ(out, "hello");
  ASSERT_TRUE(decode_base64("AP8A/w==", out));
  EXPECT_EQ(out, std::string("\x00\xff\x00\xff", 4));
  std::size_t at = 0;
  EXPECT_FALSE(decode_base64("aGV$bG8=", out, &at));
  EXPECT_EQ(at, 3u);
  EXPECT_FALSE(decode_base64("aGVsb", out, &at));  // 5 chars: a dangling 6 bits
}

TEST(ContentParts, TextOnlyArraysAreJoined) {
  ChatRequest r = parse_chat_request(with_content({{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}));
  EXPECT_EQ(r.messages[1]["content"], "ab");
  EXPECT_TRUE(r.media.empty());
}

TEST(ContentParts, ImageDataUrlBecomesATemplatePartAndBytes) {
  ChatRequest r = parse_chat_request(
      with_content({image_part("data:image/png;base64,iVBORw0K"), {{"type", "text"}, {"text", "What is it?"}}}));
  const json want = json::parse(R"([{"type":"image"},{"type":"text","text":"What is it?"}])");
  EXPECT_EQ(r.messages[1]["content"], want);
  ASSERT_EQ(r.media.size(), 1u);
  EXPECT_EQ(r.media[0].data, std::string("\x89PNG\r\n", 6));
  EXPECT_EQ(r.media[0].mime, "image/png");
  EXPECT_EQ(r.media[0].param, "messages[1].content[0].image_url.url");
  EXPECT_TRUE(r.media[0].path.empty());
}

TEST(ContentParts, DetailPicksTheBudgetAndPathsAreKept) {
  json low = {{"type", "image_url"}, {"image_url", {{"url", "data:image/jpeg;base64,/9j/"}, {"detail", "low"}}}};
  json high = {{"type", "image_url"}, {"image_url", {{"url", "file:///srv/a.png"}, {"detail", "high"}}}};
  ChatRequest r = parse_chat_request(with_content({low, high, image_part("photos/b.webp")}));
  ASSERT_EQ(r.media.size(), 3u);
  EXPECT_EQ(r.media[0].soft_tokens, 70);
  EXPECT_EQ(r.media[1].soft_tokens, 1120);
  EXPECT_EQ(r.media[1].path, "/srv/a.png");
  EXPECT_EQ(r.media[2].path, "photos/b.webp");
  EXPECT_EQ(r.media[2].soft_tokens, 0);
  json legacy = {{"type", "image_url"}, {"image_url", "data:image/webp;base64,UklGRg=="}};  // string shorthand
  EXPECT_EQ(parse_chat_request(with_content(json::array({legacy}))).media.at(0).data, "RIFF");
}

// Issue #28: file:// URLs are percent-decoded (a browser writes "my%20photo.png"); an escape
// that is malformed or encodes '/' or NUL is refused, naming the part.
TEST(ContentParts, FileUrlsArePercentDecoded) {
  ChatRequest r = parse_chat_request(with_content(
      {image_part("file:///srv/my%20photo%2Bx.png"), image_part("FILE://localhost/srv/%C3%A9t%c3%a9.png")}));
  ASSERT_EQ(r.media.size(), 2u);
  EXPECT_EQ(r.media[0].path, "/srv/my photo+x.png");
  EXPECT_EQ(r.media[1].path, "/srv/\xc3\xa9t\xc3\xa9.png");
  for (const char* url : {"file:///srv/a%2Fb.png", "file:///srv/a%00.png", "file:///srv/a%zz.png", "file:///srv/a%2"}) {
    const ApiError e = error_of(with_content(json::array({image_part(url)})));
    EXPECT_EQ(e.status(), 400) << url;
    EXPECT_EQ(e.param(), "messages[1].content[0].image_url.url") << url;
  }
}

TEST(ContentParts, InputAudioBecomesAnAudioPartAndBytes) {
  ChatRequest r = parse_chat_request(with_content(
      {image_part("data:image/png;base64,iVBORw0K"), audio_part("UklGRg==", "WAV"), {{"type", "text"}, {"text", "Both?"}}}));
  const json want = json::parse(R"([{"type":"image"},{"type":"audio"},{"type":"text","text":"Both?"}])");
  EXPECT_EQ(r.messages[1]["content"], want);
  ASSERT_EQ(r.media.size(), 2u);
  EXPECT_EQ(r.media[1].kind, MediaKind::audio);
  EXPECT_EQ(r.media[1].data, "RIFF");
  EXPECT_EQ(r.media[1].format, "wav");  // case-folded
  EXPECT_EQ(r.media[1].mime, "audio/wav");
  EXPECT_EQ(r.media[1].param, "messages[1].content[1].input_audio.data");
  EXPECT_TRUE(r.media[1].path.empty());
  for (const char* f : {"mp3", "flac", "ogg", "opus"})
    EXPECT_EQ(parse_chat_request(with_content(json::array({audio_part("SUQz", f)}))).media.at(0).format, f);
  // Images and clips share the per-request part limit.
  json many = json::array();
  for (std::size_t i = 0; i < kMaxMediaParts; ++i) many.push_back(i % 2 ? audio_part("SUQz", "mp3") : image_part("data:image/png;base64,iVBO"));
  EXPECT_EQ(parse_chat_request(with_content(many)).media.size(), kMaxMediaParts);
  many.push_back(audio_part("SUQz", "mp3"));
  ApiError e = error_of(with_content(many));
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "messages[1].content[16].input_audio.data");
}

TEST(ContentParts, BadPartsNameThemselves) {
  // `part` is the message's one content part (wrapped with json::array below: a braced
  // single json element is a copy under clang but a one-element array under GCC).
  struct Case {
    json part;
    std::string param, says;
  };
  const Case cases[] = {
      {image_part("https://example.com/a.png"), "messages[1].content[0].image_url.url", "never fetches"},
      {image_part("data:image/png,rawdata"), "messages[1].content[0].image_url.url", "only base64"},
      {image_part("data:image/gif;base64,R0lG"), "messages[1].content[0].image_url.url", "image/gif"},
      {image_part("data:image/png;base64,iV*BOR"), "messages[1].content[0].image_url.url", "offset 2"},
      {image_part("data:image/png;base64,"), "messages[1].content[0].image_url.url", "no data"},
      {image_part(""), "messages[1].content[0].image_url.url", "non-empty"},
      {{{"type", "image_url"}}, "messages[1].content[0].image_url", "need an 'image_url'"},
      {{{"type", "video"}}, "messages[1].content[0].type", "'video' is not supported (text, image_url, input_audio)"},
      {audio_part("UklGRg==", "aac"), "messages[1].content[0].input_audio.format", "'aac' is not supported (wav, mp3"},
      {audio_part("UklGRg==", ""), "messages[1].content[0].input_audio.format", "'' is not supported"},
      {{{"type", "input_audio"}, {"input_audio", {{"data", "UklGRg=="}}}}, "messages[1].content[0].input_audio.format",
       "must be a string"},
      {audio_part("Ukl-Rg==", "wav"), "messages[1].content[0].input_audio.data", "invalid base64 at offset 3"},
      {audio_part("UklGR", "wav"), "messages[1].content[0].input_audio.data", "invalid base64 at offset 4"},
      {audio_part("", "wav"), "messages[1].content[0].input_audio.data", "non-empty base64"},
      {audio_part("==", "wav"), "messages[1].content[0].input_audio.data", "holds no data"},
      {audio_part("data:audio/wav;base64,UklGRg==", "wav"), "messages[1].content[0].input_audio.data",
       "not a data: URL"},
      {{{"type", "input_audio"}}, "messages[1].content[0].input_audio", "need an 'input_audio' object"},
      {{{"type", "input_audio"}, {"input_audio", "UklGRg=="}}, "messages[1].content[0].input_audio",
       "need an 'input_audio' object"},
      {{{"type", "text"}}, "messages[1].content[0]", "string 'text'"},
      {{{"type", "image_url"}, {"image_url", {{"url", "a.png"}, {"detail", "max"}}}},
       "messages[1].content[0].image_url.detail", "auto, low or high"},
  };
  for (const auto& c : cases) {
    ApiError e = error_of(with_content(json::array({c.part})));
    EXPECT_EQ(e.status(), 400) << c.part.dump();
    EXPECT_EQ(e.param(), c.param) << c.part.dump();
    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
  }
  json many = json::array();
  for (std::size_t i = 0; i <= kMaxMediaParts; ++i) many.push_back(image_part("data:image/png;base64,iVBO"));
  ApiError e = error_of(with_content(many));
  EXPECT_EQ(e.status(), 400);
  EXPECT_NE(std::string(e.what()).find("at most 16"), std::string::npos) << e.what();
}

class LocalMedia : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ringlm_local_media_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "allowed" / "sub");
    write(root_ / "allowed" / "sub" / "a.png", "PNGDATA");
    write(root_ / "secret.png", "SECRET");
    fs::create_symlink(root_ / "secret.png", root_ / "allowed" / "link.png");
    policy_.allow_dir = root_ / "allowed";
  }
  void TearDown() override { fs::remove_all(root_); }
  static void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }
  MediaRef ref(const std::string& path) {
    MediaRef r;
    r.path = path;
    r.param = "messages[0].content[0].image_url.url";
    return r;
  }
  std::string code_of(const std::string& path) {
    try {
      load_media({ref(path)}, policy_);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), "messages[0].content[0].image_url.url");
      return e.code();
    }
    return "ok";
  }
  fs::path root_;
  MediaPolicy policy_;
};

TEST_F(LocalMedia, ReadsOnlyInsideTheFolder) {
  EXPECT_EQ(load_media({ref("sub/a.png")}, policy_).at(0).bytes, "PNGDATA");
  EXPECT_EQ(load_media({ref((root_ / "allowed/sub/../sub/a.png").string())}, policy_).at(0).bytes, "PNGDATA");
  EXPECT_EQ(code_of("../secret.png"), "local_media_refused");
  EXPECT_EQ(code_of((root_ / "secret.png").string()), "local_media_refused");
  EXPECT_EQ(code_of("link.png"), "local_media_refused");  // a symlink out of the folder
  EXPECT_EQ(code_of("../nowhere.png"), "local_media_refused");  // outside, missing: same answer
  EXPECT_EQ(code_of("sub/missing.png"), "invalid_value");
  EXPECT_EQ(code_of("sub"), "invalid_value");  // a folder
  policy_.max_bytes = 3;
  EXPECT_EQ(code_of("sub/a.png"), "media_too_large");
  policy_.allow_dir.clear();
  EXPECT_EQ(code_of("sub/a.png"), "local_media_disabled");
}

TEST_F(LocalMedia, DataIsSizeChecked) {
  MediaRef r;
  r.data = std::string(100, 'x');
  r.param = "p";
  r.mime = "image/png";
  policy_.max_bytes = 99;
  try {
    load_media({r}, policy_);
    FAIL() << "oversized data accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), "media_too_large");
    EXPECT_NE(std::string(e.what()).find("100 bytes; the limit is 99"), std::string::npos) << e.what();
  }
  policy_.max_bytes = 100;
  EXPECT_EQ(load_media({r}, policy_).at(0).bytes.size(), 100u);
}

}  // namespace
}  // namespace ringlm::server
