// The browser page `ringlm serve` answers at / (a chat and an extraction playground), built
// from src/server/web/ into the binary at compile time (cmake/EmbedFiles.cmake), so the
// server needs no files beside it and the page loads nothing from the network.
#pragma once

#include <cstddef>
#include <string_view>

namespace ringlm::server {

struct WebAsset {
  std::string_view path;          // URL path: "/" for index.html, "/ui/<file>" for the others
  std::string_view content_type;
  std::string_view body;
};

// The asset served at `path`, or nullptr.
const WebAsset* find_web_asset(std::string_view path);

// Every embedded asset (generated from src/server/web/).
extern const WebAsset kWebAssets[];
extern const std::size_t kWebAssetCount;

}  // namespace ringlm::server
