// What the HTTP server checks and records around every request, apart from the routes
// themselves: the API key (Bearer auth on /v1), CORS headers for browser clients, and the
// access log line (method, path, status, tokens, milliseconds).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace ringlm::server {

// True when `key` is empty (no auth configured) or the request carries
// "Authorization: Bearer <key>" (the scheme in any letter case). The comparison takes the
// same time wherever it differs.
bool authorized(const httplib::Request& req, const std::string& key);

// A CORS preflight: OPTIONS with an Access-Control-Request-Method header.
bool is_preflight(const httplib::Request& req);

// Adds Access-Control-Allow-Origin (and Vary) when `allowed` is "*" or equals the request's
// Origin; for a preflight also the allowed methods and headers. Nothing when `allowed` is "".
void add_cors_headers(const httplib::Request& req, httplib::Response& res, const std::string& allowed);

// Per-request bookkeeping for the access log. httplib runs a request's routing, handler,
// content provider and logger on one connection thread, so the record is thread-local:
// access_begin() at routing, access_tokens() from the handler or stream, access_line() last.
void access_begin();
void access_tokens(int prompt_tokens, int completion_tokens);
std::string access_line(const httplib::Request& req, const httplib::Response& res);

// `text` safe to write to a log or a terminal: bytes outside printable ASCII (CR, LF, ESC,
// C1 controls, UTF-8) and the backslash become \xNN, so one request is one line and cannot
// drive the terminal. Cut after `max_bytes` of output ("..." appended).
std::string escape_for_log(std::string_view text, std::size_t max_bytes);

}  // namespace ringlm::server
