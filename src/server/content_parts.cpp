#include "server/content_parts.h"

#include <array>
#include <cctype>

#include "server/api_error.h"

namespace ringlm::server {

using json = nlohmann::ordered_json;

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param, "invalid_value");
}

// What the parts of one message add up to.
struct PartsOut {
  json parts = json::array();  // template parts, in order
  std::string text;            // all text parts joined (used when there is no media)
  bool has_media = false;
  std::vector<MediaRef>* media = nullptr;
};

void add_media(PartsOut& out, MediaRef ref) {
  if (out.media->size() >= kMaxMediaParts)
    bad(ref.param, "a request may carry at most " + std::to_string(kMaxMediaParts) + " images or audio clips");
  out.parts.push_back({{"type", media_kind_name(ref.kind)}});
  out.has_media = true;
  out.media->push_back(std::move(ref));
}

void text_part(const json& part, const std::string& param, PartsOut& out) {
  auto t = part.find("text");
  if (t == part.end() || !t->is_string()) bad(param, "'" + param + "' text parts need a string 'text'");
  out.text += t->get<std::string>();
  out.parts.push_back({{"type", "text"}, {"text", *t}});
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

// "data:<type>[;params];base64,<data>" -> the bytes and the media type.
void parse_data_url(std::string_view url, const std::string& param, MediaRef& ref) {
  const std::size_t comma = url.find(',');
  if (comma == std::string_view::npos) bad(param, "'" + param + "': a data: URL needs a ',' before its data");
  std::string_view head = url.substr(5, comma - 5);  // after "data:"
  const std::size_t semi = head.find(';');
  std::string type(head.substr(0, semi));
  for (auto& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool base64 = false;
  for (std::string_view rest = semi == std::string_view::npos ? "" : head.substr(semi + 1); !rest.empty();) {
    const std::size_t next = rest.find(';');
    if (rest.substr(0, next) == "base64") base64 = true;
    rest = next == std::string_view::npos ? "" : rest.substr(next + 1);
  }
  if (!base64) bad(param, "'" + param + "': only base64 data: URLs are accepted (data:image/png;base64,...)");
  static constexpr std::array<std::string_view, 4> kImageTypes = {"image/png", "image/jpeg", "image/jpg", "image/webp"};
  bool known = false;
  for (auto t : kImageTypes) known = known || type == t;
  if (!known)
    bad(param, "'" + param + "': image type '" + type + "' is not supported (image/png, image/jpeg or image/webp)");
  std::size_t at = 0;
  if (!decode_base64(url.substr(comma + 1), ref.data, &at))
    bad(param, "'" + param + "': invalid base64 at offset " + std::to_string(at) + " of the data");
  if (ref.data.empty()) bad(param, "'" + param + "': the data: URL holds no data");
  ref.mime = std::move(type);
}

// A file:// URL's path with its %XX escapes decoded (a browser writes "my%20photo.png"); a
// malformed escape or an encoded NUL or '/' is refused (an encoded '/' would name another path
// than the one the URL shows).
std::string percent_decode_path(std::string_view s, const std::string& param) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    const int hi = i + 2 < s.size() ? hex(s[i + 1]) : -1, lo = i + 2 < s.size() ? hex(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) bad(param, "'" + param + "': malformed %-escape at offset " + std::to_string(i) + " of the file:// URL's path");
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0' || c == '/')
      bad(param, "'" + param + "': the file:// URL's path encodes " + (c == '/' ? "'/'" : "a NUL byte") + " at offset " +
                     std::to_string(i));
    out += c;
    i += 2;
  }
  return out;
}

// The URL of an image part: a data: URL is decoded here; a file:// URL or a plain path is
// kept for the server to resolve (local_media.h); any other scheme is refused.
void image_url_part(const json& part, const std::string& param, PartsOut& out) {
  auto iu = part.find("image_url");
  if (iu == part.end()) bad(param + ".image_url", "'" + param + "' image_url parts need an 'image_url'");
  const json* url_field = nullptr;
  std::string at = param + ".image_url";
  MediaRef ref;
  if (iu->is_string()) {
    url_field = &*iu;  // the older shorthand: "image_url": "<url>"
  } else if (iu->is_object()) {
    auto u = iu->find("url");
    if (u != iu->end()) url_field = &*u;
    at += ".url";
    if (auto d = iu->find("detail"); d != iu->end() && !d->is_null()) {
      // OpenAI's resolution hint picks the soft-token budget: low = the processor's smallest,
      // high = its largest, auto = the model's default.
      const std::string detail = d->is_string() ? d->get<std::string>() : "";
      if (detail == "low") ref.soft_tokens = 70;
      else if (detail == "high") ref.soft_tokens = 1120;
      else if (detail != "auto") bad(param + ".image_url.detail", "'" + param + ".image_url.detail' must be auto, low or high");
    }
  }
  if (!url_field || !url_field->is_string() || url_field->get_ref<const std::string&>().empty())
    bad(at, "'" + at + "' must be a non-empty string");
  const std::string& url = url_field->get_ref<const std::string&>();
  ref.kind = MediaKind::image;
  ref.param = at;
  if (starts_with_ci(url, "data:")) {
    parse_data_url(url, at, ref);
  } else if (starts_with_ci(url, "file://")) {
    std::string_view rest = std::string_view(url).substr(7);
    if (starts_with_ci(rest, "localhost/")) rest.remove_prefix(9);  // file://localhost/x is file:///x (RFC 8089)
    if (rest.empty() || rest[0] != '/') bad(at, "'" + at + "': a file:// URL needs an absolute path (file:///dir/image.png)");
    ref.path = percent_decode_path(rest, at);
  } else if (const std::size_t colon = url.find(':');
             colon != std::string::npos && colon > 1 && url.find('/') > colon) {
    // A scheme ("https:", "ftp:"); a one-letter one would be a Windows drive, not a URL.
    bad(at, "'" + at + "': only data: URLs and local files are accepted; ringlm serve never fetches from the network");
  } else {
    ref.path = url;
  }
  add_media(out, std::move(ref));
}

// OpenAI's audio part: {"type":"input_audio","input_audio":{"data":"<base64>","format":"wav"}}.
// The data is the file's bytes in base64 (no data: URL); `format` names its container, and
// the backend refuses data whose decoded container is not the one named. No local paths and
// no URLs: OpenAI's part has none.
void input_audio_part(const json& part, const std::string& param, PartsOut& out) {
  const std::string at = param + ".input_audio";
  auto ia = part.find("input_audio");
  if (ia == part.end() || !ia->is_object())
    bad(at, "'" + param + "' input_audio parts need an 'input_audio' object {\"data\": base64, \"format\": \"wav\"}");
  auto f = ia->find("format");
  if (f == ia->end() || !f->is_string()) bad(at + ".format", "'" + at + ".format' must be a string (wav, mp3, flac, ogg or opus)");
  std::string format = f->get<std::string>();
  for (auto& c : format) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::array<std::string_view, 5> kAudioFormats = {"wav", "mp3", "flac", "ogg", "opus"};
  bool known = false;
  for (auto t : kAudioFormats) known = known || format == t;
  if (!known)
    bad(at + ".format", "'" + at + ".format': audio format '" + f->get<std::string>() +
                            "' is not supported (wav, mp3, flac, ogg or opus)");
  auto d = ia->find("data");
  if (d == ia->end() || !d->is_string() || d->get_ref<const std::string&>().empty())
    bad(at + ".data", "'" + at + ".data' must be a non-empty base64 string");
  std::string_view data = d->get_ref<const std::string&>();
  if (starts_with_ci(data, "data:"))
    bad(at + ".data", "'" + at + ".data' is the base64 of the file itself, not a data: URL");
  MediaRef ref;
  ref.kind = MediaKind::audio;
  ref.param = at + ".data";
  std::size_t bad_at = 0;
  if (!decode_base64(data, ref.data, &bad_at))
    bad(ref.param, "'" + ref.param + "': invalid base64 at offset " + std::to_string(bad_at));
  if (ref.data.empty()) bad(ref.param, "'" + ref.param + "' holds no data");
  ref.mime = "audio/" + format;
  ref.format = std::move(format);
  add_media(out, std::move(ref));
}

using PartParser = void (*)(const json& part, const std::string& param, PartsOut& out);
struct PartType {
  std::string_view type;
  PartParser parse;
};
// One entry per content-part type the server takes.
constexpr PartType kPartTypes[] = {
    {"text", text_part},
    {"image_url", image_url_part},
    {"input_audio", input_audio_part},
};

}  // namespace

json normalise_content(const json& content, std::size_t index, std::vector<MediaRef>& media) {
  const std::string param = "messages[" + std::to_string(index) + "].content";
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array()) bad(param, "'" + param + "' must be a string, null or an array of content parts");
  PartsOut out;
  out.media = &media;
  for (std::size_t k = 0; k < content.size(); ++k) {
    const json& part = content[k];
    const std::string at = param + "[" + std::to_string(k) + "]";
    if (!part.is_object()) bad(at, "'" + at + "' must be an object");
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) bad(at + ".type", "'" + at + ".type' must be a string");
    const PartType* found = nullptr;
    for (const auto& t : kPartTypes) if (t.type == type->get_ref<const std::string&>()) found = &t;
    if (!found) {
      std::string known;
      for (const auto& t : kPartTypes) known += (known.empty() ? "" : ", ") + std::string(t.type);
      bad(at + ".type", "'" + at + ".type': content part type '" + type->get<std::string>() + "' is not supported (" + known + ")");
    }
    found->parse(part, at, out);
  }
  if (!out.has_media) return out.text;
  return out.parts;
}

bool decode_base64(std::string_view text, std::string& out, std::size_t* bad_at) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::size_t end = text.size();
  for (int pad = 0; pad < 2 && end > 0 && text[end - 1] == '='; ++pad) --end;
  out.clear();
  out.reserve(end / 4 * 3 + 3);
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < end; ++i) {
    const int v = value(text[i]);
    if (v < 0) {
      if (bad_at) *bad_at = i;
      return false;
    }
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (end % 4 == 1) {  // one character carries 6 bits: never a whole byte
    if (bad_at) *bad_at = end - 1;
    return false;
  }
  return true;
}

}  // namespace ringlm::server
