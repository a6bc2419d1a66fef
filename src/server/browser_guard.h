// What keeps a keyless `ringlm serve` on localhost from being driven by web pages the user
// happens to visit (issue #28):
//
// - DNS rebinding: a page at attacker.example rebinds its name to 127.0.0.1 and then reads
//   the API as same-origin. Its requests carry `Host: attacker.example`. Without --api-key,
//   only these Host values are served: loopback names (localhost, *.localhost, which browsers
//   never resolve through DNS), any IP literal (a rebinding always goes through a name; a
//   literal is what a LAN client typing the address sends), the --host value, and the names
//   given to --allowed-hosts ("*" turns the check off). A port suffix is ignored; a missing
//   Host (HTTP/1.0) is served. So `--host 0.0.0.0` on a LAN works by address; by name it
//   needs `--allowed-hosts NAME` (or --api-key, which makes every check here unnecessary: a
//   page cannot know the key, and sending one needs a CORS preflight the server refuses).
// - Simple-request CSRF: browsers POST text/plain, multipart/form-data and form-urlencoded
//   bodies cross-origin without a preflight (and a form can shape its body into JSON).
//   Without --api-key the POST API routes take only `Content-Type: application/json` (415).
// - Framing and injection into the page: the page's responses carry a Content-Security-Policy
//   that allows only its own scripts, styles and API, and X-Frame-Options: DENY.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ringlm::server {

struct HostPolicy {
  std::string listen_host;                 // --host
  std::vector<std::string> allowed_hosts;  // --allowed-hosts (names; "*" = any)
};

// The Host header's name without the port ("[::1]:8080" -> "::1", "LocalHost." -> "localhost").
std::string host_name_of(std::string_view host_header);

// True when a request with this Host header may be served without an API key. An empty
// header (HTTP/1.0) is allowed.
bool host_allowed(std::string_view host_header, const HostPolicy& policy);

// True for "application/json" with any parameters ("; charset=utf-8"), in any letter case,
// and for the +json structured suffix ("application/vnd.api+json").
bool is_json_content_type(std::string_view content_type);

// Headers for the web page's responses.
inline constexpr const char* kPageCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

}  // namespace ringlm::server
