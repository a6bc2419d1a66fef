#include "server/access.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <string_view>
#include <chrono>
#include <cstdio>

namespace ringlm::server {

namespace {

using Clock = std::chrono::steady_clock;

struct AccessRecord {
  Clock::time_point start = Clock::now();
  int prompt_tokens = -1;  // -1: the request generated nothing
  int completion_tokens = 0;
};
thread_local AccessRecord t_record;

// Compares every byte whatever the first difference, so response time says nothing about
// how much of a guessed key was right.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

// A non-empty comma-separated list of header names (RFC 9110 tokens), at most 1 KiB.
bool header_list(const std::string& s) {
  if (s.empty() || s.size() > 1024) return false;
  bool name = false;  // something since the last comma
  for (char c : s) {
    if (c == ',') {
      if (!name) return false;
      name = false;
    } else if (c == ' ' || c == '\t') {
      continue;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos) {
      name = true;
    } else {
      return false;
    }
  }
  return name;
}

}  // namespace

bool authorized(const httplib::Request& req, const std::string& key) {
  if (key.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  // The scheme is case-insensitive (RFC 9110 section 11.1): "bearer KEY" is the same.
  static constexpr std::string_view kBearer = "bearer";
  if (header.size() <= kBearer.size() || (header[kBearer.size()] != ' ' && header[kBearer.size()] != '\t')) return false;
  for (std::size_t i = 0; i < kBearer.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != kBearer[i]) return false;
  std::size_t at = kBearer.size();
  while (at < header.size() && (header[at] == ' ' || header[at] == '\t')) ++at;
  return same_secret(header.substr(at), key);
}

std::string escape_for_log(std::string_view text, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 8);
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool is_preflight(const httplib::Request& req) {
  return req.method == "OPTIONS" && req.has_header("Access-Control-Request-Method");
}

void add_cors_headers(const httplib::Request& req, httplib::Response& res, const std::string& allowed) {
  if (allowed.empty()) return;
  const std::string origin = req.get_header_value("Origin");
  if (allowed == "*") {
    res.set_header("Access-Control-Allow-Origin", "*");
  } else if (origin == allowed) {
    res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "Origin");
  } else {
    return;  // another origin: no grant, the browser blocks the page from reading the reply
  }
  if (is_preflight(req)) {
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    // The headers the browser asks for are granted, as long as the list is plain header
    // names: SDKs send their own (the openai JS client's x-stainless-*), and the origin is
    // already trusted.
    const std::string asked = req.get_header_value("Access-Control-Request-Headers");
    res.set_header("Access-Control-Allow-Headers", header_list(asked) ? asked : "Authorization, Content-Type");
    res.set_header("Access-Control-Max-Age", "600");
    res.set_header("Vary", "Access-Control-Request-Headers");
  } else {
    res.set_header("Access-Control-Expose-Headers", "X-Ringlm-Max-Tokens-Clamped");
  }
}

void access_begin() { t_record = AccessRecord{}; }

void access_tokens(int prompt_tokens, int completion_tokens) {
  t_record.prompt_tokens = prompt_tokens;
  t_record.completion_tokens = completion_tokens;
}

std::string access_line(const httplib::Request& req, const httplib::Response& res) {
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t_record.start).count();
  char tokens[48] = "-";
  if (t_record.prompt_tokens >= 0)
    std::snprintf(tokens, sizeof tokens, "%d+%d", t_record.prompt_tokens, t_record.completion_tokens);
  // The path only: a query string could carry something the client meant to keep private.
  // Everything from the request is escaped: a decoded path may hold CR/LF (a forged log
  // line) or ESC (terminal control sequences), issue #28.
  char tail[128];
  std::snprintf(tail, sizeof tail, " %d tokens=%s %.1f ms", res.status, tokens, ms);
  return "ringlm serve: " + escape_for_log(req.remote_addr, 64) + " " + escape_for_log(req.method, 32) + " " +
         escape_for_log(req.path, 200) + tail;
}

}  // namespace ringlm::server
