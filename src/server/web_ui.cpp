#include "server/web_ui.h"

namespace ringlm::server {

const WebAsset* find_web_asset(std::string_view path) {
  if (path == "/index.html") path = "/";
  if (path == "/favicon.ico") path = "/ui/favicon.svg";  // browsers ask for it whatever the page links
  for (std::size_t i = 0; i < kWebAssetCount; ++i)
    if (kWebAssets[i].path == path) return &kWebAssets[i];
  return nullptr;
}

}  // namespace ringlm::server
