// libFuzzer target for the HTTP framing layer (server/http_framing.h): any byte stream, split
// into pieces as a network would, must give a head (or "need more"), a chunked body within the
// limits, or a FramingError with one of the statuses the server answers with.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/http_framing.h"

namespace {
bool known_status(int s) {
  return s == 400 || s == 408 || s == 413 || s == 414 || s == 415 || s == 417 || s == 431 || s == 501 || s == 505;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ringlm::server;
  if (size < 1) return 0;
  const std::size_t piece = 1 + data[0] % 64;  // how the bytes arrive
  const std::string_view wire(reinterpret_cast<const char*>(data + 1), size - 1);
  FramingLimits limits;
  limits.max_line = 256;
  limits.max_header_bytes = 1024;
  limits.max_headers = 16;
  limits.max_body = 4096;
  try {
    std::string in;
    std::size_t pos = 0, head_len = 0;
    while ((head_len = find_head_end(in, limits)) == 0) {
      if (in.size() > limits.max_header_bytes + piece) std::abort();  // buffered past the limit
      if (pos >= wire.size()) return 0;                                // needs more bytes
      in.append(wire.substr(pos, piece));
      pos += piece;
    }
    RequestHead head = parse_head(std::string_view(in).substr(0, head_len), limits);
    const std::string norm = normalized_head(head, 0);
    if (find_head_end(norm, FramingLimits{}) != norm.size()) std::abort();  // what httplib gets is one head
    if (!head.chunked) return 0;
    in.erase(0, head_len);
    ChunkedDecoder decoder(limits);
    std::string body;
    for (;;) {
      in.erase(0, decoder.feed(in, body));
      if (body.size() > limits.max_body) std::abort();
      if (decoder.done() || pos >= wire.size()) break;
      in.append(wire.substr(pos, piece));
      pos += piece;
      if (in.size() > limits.max_line + limits.max_body + 2 * piece + 64) std::abort();  // unbounded buffering
    }
  } catch (const FramingError& e) {
    if (!known_status(e.status())) std::abort();
  }
  return 0;
}
