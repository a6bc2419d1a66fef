#include "server/web_ui.h"

namespace ringlm::server {

const WebAsset* find_web_asset(std::string_view path) {
  if (path == "/index.html") path = "/";
  for (std::size_t i = 0; i < kWebAssetCount; ++i)
    if (kWebAssets[i].path == path) return &kWebAssets[i];
  return nullptr;
}

}  // namespace ringlm::server
