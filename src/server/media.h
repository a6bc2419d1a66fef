// Media (images and audio clips) that a chat request carries in its content parts, on their
// way from the request body (content_parts.h: references) through the server (read and
// size-checked: local_media.h) to the backend (decoded and encoded into soft tokens).
#pragma once

#include <string>

namespace ringlm::server {

enum class MediaKind { image, audio };

inline const char* media_kind_name(MediaKind k) {
  switch (k) {
    case MediaKind::image: return "image";
    case MediaKind::audio: return "audio";
  }
  return "media";
}

// One media content part as the request names it. Exactly one of `data` / `path` is set.
struct MediaRef {
  MediaKind kind = MediaKind::image;
  std::string param;   // where it is in the body ("messages[1].content[0].image_url"), for errors
  std::string data;    // the bytes of a data: URL or of input_audio's data, base64-decoded
  std::string path;    // a local file (file:// URL or plain path), resolved later
  std::string mime;    // the data: URL's media type ("image/png") or "audio/<format>", informational
  std::string format;  // input_audio's declared format ("wav", "mp3", ...); empty for images
  int soft_tokens = 0; // image budget from `detail` (low/high); 0: the model's default
};

// The same part with its bytes in hand: what Backend::render_chat_media takes.
struct MediaInput {
  MediaKind kind = MediaKind::image;
  std::string bytes;
  std::string param;    // as in MediaRef
  std::string name;     // for error messages: the param, plus the file name for a path
  std::string format;   // as in MediaRef
  int soft_tokens = 0;  // 0: the model's default
};

}  // namespace ringlm::server
