// HTTP/1.1 request framing with hard limits, as pure functions over bytes: where a request head
// ends, what it says (method, target, headers, how the body is framed) and how a chunked body
// decodes. The connection guard (connection_guard.h) runs these on every request before
// cpp-httplib sees it, so that no request reaches httplib with a head or body over the limits,
// a compressed body, or an ambiguous length. Also the HTTP fuzz target's entry point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringlm::server {

struct FramingLimits {
  std::size_t max_line = 8 << 10;           // one request line or header line (414 / 431)
  std::size_t max_header_bytes = 32 << 10;  // the whole head, request line included (431)
  std::size_t max_headers = 64;             // header fields (431)
  std::size_t max_body = 1 << 20;           // decoded body bytes, any transfer coding (413)
};

// A request the server refuses; status is the HTTP status to answer with (400, 413, 414, 415,
// 417, 431, 501, 505), code the OpenAI-style error code. The connection closes after it.
class FramingError : public std::runtime_error {
 public:
  FramingError(int status, std::string code, const std::string& message)
      : std::runtime_error(message), status_(status), code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string code_;
};

struct RequestHead {
  std::string method, target, version;                       // version: "HTTP/1.0" or "HTTP/1.1"
  std::vector<std::pair<std::string, std::string>> headers;  // as sent, values trimmed
  bool chunked = false;
  std::uint64_t content_length = 0;  // when not chunked (0 without a Content-Length)
  bool expect_continue = false;
};

// Length of the complete head at the start of `buf` (through its blank line), or 0 when more
// bytes are needed. Throws FramingError as soon as the bytes seen already break a limit, so
// a client cannot make the server buffer more than max_header_bytes waiting for the end.
std::size_t find_head_end(std::string_view buf, const FramingLimits& limits);

// Parses a complete head (as delimited by find_head_end). Refuses: a malformed request line
// or header (400), an HTTP version other than 1.0/1.1 (505), obsolete line folding, both
// Content-Length and Transfer-Encoding or conflicting lengths (400), a transfer coding other
// than chunked (501), any Content-Encoding other than identity (415), Expect other than
// 100-continue (417), a declared length above max_body (413).
RequestHead parse_head(std::string_view head, const FramingLimits& limits);

// The head httplib is given: the request line and headers without the framing ones
// (Transfer-Encoding, Content-Length, Content-Encoding, Expect), plus the decoded length.
std::string normalized_head(const RequestHead& head, std::size_t body_size);

// Incremental decoder for `Transfer-Encoding: chunked`. feed() consumes what it can of `in`
// (returns the bytes consumed) and appends decoded data to `body`; call again with more bytes
// until done(). Enforces max_body on the decoded bytes, max_line on size lines, and the header
// limits on the trailer section (whose fields are discarded).
class ChunkedDecoder {
 public:
  explicit ChunkedDecoder(const FramingLimits& limits) : limits_(limits) {}
  std::size_t feed(std::string_view in, std::string& body);
  bool done() const { return state_ == State::Done; }

 private:
  enum class State { Size, Data, DataEnd, Trailer, Done };
  FramingLimits limits_;
  State state_ = State::Size;
  std::uint64_t remaining_ = 0;  // data bytes left in the current chunk
  std::size_t trailer_bytes_ = 0, trailer_fields_ = 0;
};

}  // namespace ringlm::server
