#include "server/http_framing.h"

#include <algorithm>

namespace ringlm::server {

namespace {

// RFC 9110 token characters (method and field names).
bool is_tchar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(c); }); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "a, b ,c" into lowercased, trimmed elements (empty elements are kept so that the
// caller can refuse them).
std::vector<std::string> list_elements(std::string_view v) {
  std::vector<std::string> out;
  for (;;) {
    std::size_t comma = v.find(',');
    out.push_back(lower(trim(v.substr(0, comma))));
    if (comma == std::string_view::npos) return out;
    v.remove_prefix(comma + 1);
  }
}

// One line without its terminator ("\n", optionally preceded by "\r").
std::string_view line_body(std::string_view buf, std::size_t begin, std::size_t newline) {
  std::string_view line = buf.substr(begin, newline - begin);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

std::size_t skip_leading_blank_lines(std::string_view buf) {
  std::size_t pos = 0;
  for (;;) {
    if (pos < buf.size() && buf[pos] == '\n') {
      ++pos;
    } else if (pos + 1 < buf.size() && buf[pos] == '\r' && buf[pos + 1] == '\n') {
      pos += 2;
    } else {
      return pos;
    }
  }
}

[[noreturn]] void too_large_head(const std::string& what) { throw FramingError(431, "headers_too_large", what); }

void check_line_length(std::size_t len, std::size_t line_no, const FramingLimits& limits) {
  if (len <= limits.max_line) return;
  if (line_no == 0) {
    throw FramingError(414, "uri_too_long",
                       "request line is longer than the limit of " + std::to_string(limits.max_line) + " bytes");
  }
  too_large_head("a header line is longer than the limit of " + std::to_string(limits.max_line) + " bytes");
}

bool has_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return (c < 0x20 && c != '\t') || c == 0x7f;
  });
}

[[noreturn]] void bad(const std::string& what) { throw FramingError(400, "bad_request", what); }

}  // namespace

std::size_t find_head_end(std::string_view buf, const FramingLimits& limits) {
  std::size_t pos = skip_leading_blank_lines(buf);
  for (std::size_t line_no = 0;; ++line_no) {
    if (pos > limits.max_header_bytes) {
      too_large_head("request head is larger than the limit of " + std::to_string(limits.max_header_bytes) + " bytes");
    }
    if (line_no > limits.max_headers + 1) {
      too_large_head("request has more than the limit of " + std::to_string(limits.max_headers) + " header fields");
    }
    const std::size_t nl = buf.find('\n', pos);
    if (nl == std::string_view::npos) {
      check_line_length(buf.size() - pos, line_no, limits);
      if (buf.size() > limits.max_header_bytes) {
        too_large_head("request head is larger than the limit of " + std::to_string(limits.max_header_bytes) + " bytes");
      }
      return 0;
    }
    const std::string_view line = line_body(buf, pos, nl);
    check_line_length(line.size(), line_no, limits);
    pos = nl + 1;
    if (line.empty()) {
      if (pos > limits.max_header_bytes) {
        too_large_head("request head is larger than the limit of " + std::to_string(limits.max_header_bytes) + " bytes");
      }
      return pos;
    }
  }
}

RequestHead parse_head(std::string_view buf, const FramingLimits& limits) {
  RequestHead h;
  std::size_t pos = skip_leading_blank_lines(buf);
  std::vector<std::string_view> lines;
  while (pos < buf.size()) {
    std::size_t nl = buf.find('\n', pos);
    if (nl == std::string_view::npos) bad("request head does not end with a blank line");
    std::string_view line = line_body(buf, pos, nl);
    pos = nl + 1;
    if (line.empty()) break;
    lines.push_back(line);
  }
  if (lines.empty()) bad("empty request");
  if (lines.size() - 1 > limits.max_headers) {
    too_large_head("request has more than the limit of " + std::to_string(limits.max_headers) + " header fields");
  }

  // Request line: method SP target SP version, single spaces.
  const std::string_view rl = lines[0];
  const std::size_t sp1 = rl.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : rl.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || rl.find(' ', sp2 + 1) != std::string_view::npos) {
    bad("malformed request line (expected METHOD TARGET HTTP/1.1)");
  }
  h.method = std::string(rl.substr(0, sp1));
  h.target = std::string(rl.substr(sp1 + 1, sp2 - sp1 - 1));
  h.version = std::string(rl.substr(sp2 + 1));
  if (!is_token(h.method)) bad("malformed request method");
  if (h.target.empty() || has_control(h.target) || h.target.find('\t') != std::string::npos) bad("malformed request target");
  if (h.version != "HTTP/1.1" && h.version != "HTTP/1.0") {
    if (h.version.size() == 8 && h.version.compare(0, 5, "HTTP/") == 0) {
      throw FramingError(505, "http_version_not_supported", "HTTP version " + h.version + " is not supported (use HTTP/1.1)");
    }
    bad("malformed HTTP version in the request line");
  }

  std::optional<std::uint64_t> length;
  std::vector<std::string> codings;
  bool has_te = false;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line.front() == ' ' || line.front() == '\t') bad("obsolete header line folding is not accepted");
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      bad("malformed header line " + std::to_string(i) + " (expected Name: value)");
    }
    const std::string_view value = trim(line.substr(colon + 1));
    if (has_control(value)) bad("header '" + std::string(line.substr(0, colon)) + "' contains control characters");
    h.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
    const std::string name = lower(line.substr(0, colon));
    if (name == "content-length") {
      if (value.empty() || value.size() > 18 || !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        bad("malformed Content-Length '" + std::string(value) + "'");
      }
      const std::uint64_t n = std::stoull(std::string(value));
      if (length && *length != n) bad("conflicting Content-Length headers");
      length = n;
    } else if (name == "transfer-encoding") {
      has_te = true;
      for (auto& c : list_elements(value)) codings.push_back(std::move(c));
    } else if (name == "content-encoding") {
      for (const auto& c : list_elements(value)) {
        if (c != "identity") {
          throw FramingError(415, "unsupported_content_encoding",
                             "request bodies with Content-Encoding '" + std::string(value) +
                                 "' are not accepted; send the body uncompressed");
        }
      }
    } else if (name == "expect") {
      if (lower(value) != "100-continue") {
        throw FramingError(417, "expectation_failed", "Expect: " + std::string(value) + " is not supported");
      }
      h.expect_continue = true;
    }
  }

  if (has_te) {
    if (h.version == "HTTP/1.0") bad("Transfer-Encoding is not allowed in an HTTP/1.0 request");
    if (length) bad("a request may not have both Content-Length and Transfer-Encoding");
    for (const auto& c : codings) {
      if (c.empty()) bad("malformed Transfer-Encoding");
      if (c != "chunked") {
        throw FramingError(501, "unsupported_transfer_encoding",
                           "transfer coding '" + c + "' is not supported (only chunked, uncompressed)");
      }
    }
    if (codings.size() != 1) bad("Transfer-Encoding must be chunked exactly once");
    h.chunked = true;
  } else {
    h.content_length = length.value_or(0);
    if (h.content_length > limits.max_body) {
      throw FramingError(413, "body_too_large",
                         "request body of " + std::to_string(h.content_length) + " bytes is larger than the limit of " +
                             std::to_string(limits.max_body) + " bytes");
    }
  }
  return h;
}

std::string normalized_head(const RequestHead& head, std::size_t body_size) {
  std::string out = head.method + " " + head.target + " " + head.version + "\r\n";
  for (const auto& [name, value] : head.headers) {
    const std::string n = lower(name);
    if (n == "transfer-encoding" || n == "content-length" || n == "content-encoding" || n == "expect") continue;
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (body_size > 0 || head.method == "POST" || head.method == "PUT" || head.method == "PATCH") {
    out += "Content-Length: " + std::to_string(body_size) + "\r\n";
  }
  out += "\r\n";
  return out;
}

std::size_t ChunkedDecoder::feed(std::string_view in, std::string& body) {
  std::size_t i = 0;
  while (i < in.size() && state_ != State::Done) {
    switch (state_) {
      case State::Size: {
        const std::size_t nl = in.find('\n', i);
        if (nl == std::string_view::npos) {
          if (in.size() - i > limits_.max_line) bad("chunk size line is longer than " + std::to_string(limits_.max_line) + " bytes");
          return i;
        }
        std::string_view line = line_body(in, i, nl);
        if (line.size() > limits_.max_line) bad("chunk size line is longer than " + std::to_string(limits_.max_line) + " bytes");
        i = nl + 1;
        std::size_t digits = 0;
        std::uint64_t size = 0;
        while (digits < line.size()) {
          const char c = line[digits];
          int v = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
          if (v < 0) break;
          if (digits >= 15) {
            throw FramingError(413, "body_too_large",
                               "a chunk is larger than the body limit of " + std::to_string(limits_.max_body) + " bytes");
          }
          size = size * 16 + static_cast<std::uint64_t>(v);
          ++digits;
        }
        if (digits == 0) bad("malformed chunk size line");
        const std::string_view rest = trim(line.substr(digits));
        if (!rest.empty() && rest.front() != ';') bad("malformed chunk size line");
        if (has_control(rest)) bad("malformed chunk extension");
        if (size > limits_.max_body - body.size()) {
          throw FramingError(413, "body_too_large",
                             "chunked request body is larger than the limit of " + std::to_string(limits_.max_body) + " bytes");
        }
        remaining_ = size;
        state_ = size == 0 ? State::Trailer : State::Data;
        break;
      }
      case State::Data: {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, in.size() - i));
        body.append(in.data() + i, n);
        i += n;
        remaining_ -= n;
        if (remaining_ == 0) state_ = State::DataEnd;
        break;
      }
      case State::DataEnd: {
        if (in[i] == '\n') {
          i += 1;
        } else if (in[i] == '\r') {
          if (i + 1 >= in.size()) return i;
          if (in[i + 1] != '\n') bad("chunk data is not followed by CRLF");
          i += 2;
        } else {
          bad("chunk data is not followed by CRLF");
        }
        state_ = State::Size;
        break;
      }
      case State::Trailer: {
        const std::size_t nl = in.find('\n', i);
        if (nl == std::string_view::npos) {
          if (in.size() - i > limits_.max_line) too_large_head("a trailer line is longer than " + std::to_string(limits_.max_line) + " bytes");
          return i;
        }
        const std::string_view line = line_body(in, i, nl);
        trailer_bytes_ += nl + 1 - i;
        i = nl + 1;
        if (line.size() > limits_.max_line || trailer_bytes_ > limits_.max_header_bytes) {
          too_large_head("chunked trailer section is larger than the header limit");
        }
        if (line.empty()) {
          state_ = State::Done;
          break;
        }
        if (++trailer_fields_ > limits_.max_headers) too_large_head("chunked trailer has too many fields");
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) bad("malformed trailer field");
        break;
      }
      case State::Done:
        break;
    }
  }
  return i;
}

}  // namespace ringlm::server
