// OpenAI chat content parts -> what the chat template renders plus the media they carry.
//
//   "content": "text"                                   -> stays a string
//   "content": [{"type":"text","text":"a"}, ...]        -> the texts joined into one string
//   "content": [{"type":"image_url","image_url":{"url":"data:image/png;base64,..."}},
//               {"type":"text","text":"What is this?"}] -> [{"type":"image"},{"type":"text",...}]
//                                                          plus one MediaRef, in order
//   "content": [{"type":"input_audio",
//                "input_audio":{"data":"<base64>","format":"wav"}}] -> [{"type":"audio"}] + a MediaRef
//
// Each part type has one parse function in a table (content_parts.cpp). Pure functions of
// the body, so the request fuzz target covers them: nothing here reads a file or the network.
// An image part's URL is a data: URL (base64) or a local path (file:// URL or a plain path),
// which the server resolves only under --allow-local-media (local_media.h); http(s) and other
// schemes are refused, never fetched. An audio part carries its bytes (base64) and format.
// Errors are ApiError 400 whose param names the part.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/media.h"

namespace ringlm::server {

// Media parts one request may carry (over all its messages).
inline constexpr std::size_t kMaxMediaParts = 16;

// Normalises the `content` of message `index`: null and strings stay; an array of parts
// becomes one string when it holds only text, otherwise an array of {"type":"text","text"},
// {"type":"image"} and {"type":"audio"} parts in the order given, each media part appending its reference to
// `media`.
nlohmann::ordered_json normalise_content(const nlohmann::ordered_json& content, std::size_t index,
                                         std::vector<MediaRef>& media);

// Standard base64 (RFC 4648 section 4; '=' padding optional). Returns false, with the
// offending offset in *bad_at, on any other character or a dangling final character.
bool decode_base64(std::string_view text, std::string& out, std::size_t* bad_at = nullptr);

}  // namespace ringlm::server
