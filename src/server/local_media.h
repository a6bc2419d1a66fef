// The bytes of a request's media parts: a data: URL's bytes as they came, a local path read
// only from inside the folder `serve --allow-local-media DIR` names. The path is folded
// lexically (relative paths against DIR) and must name something under DIR; the kernel then
// opens it beneath DIR refusing every symlink, and the bytes come from that descriptor
// (io/beneath.h), so a folder swapped for a symlink mid-request cannot lead outside. Without
// the flag every path is refused. Sizes are checked (fstat) before reading.
// Failures are ApiError 400 naming the part (param) and, for files, the path as sent.
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "server/media.h"

namespace ringlm::server {

struct MediaPolicy {
  std::filesystem::path allow_dir;      // empty: no local files
  std::size_t max_bytes = 20u << 20;    // one image or audio clip, encoded bytes (data or file)
};

std::vector<MediaInput> load_media(const std::vector<MediaRef>& refs, const MediaPolicy& policy);

}  // namespace ringlm::server
