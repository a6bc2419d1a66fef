#include "server/browser_guard.h"

#include <arpa/inet.h>

#include <cctype>

namespace ringlm::server {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_ip_literal(const std::string& name) {
  unsigned char buf[16];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string host_name_of(std::string_view h) {
  while (!h.empty() && (h.back() == ' ' || h.back() == '\t')) h.remove_suffix(1);
  while (!h.empty() && (h.front() == ' ' || h.front() == '\t')) h.remove_prefix(1);
  std::string_view name = h;
  if (!h.empty() && h.front() == '[') {  // [v6]:port
    const std::size_t close = h.find(']');
    name = close == std::string_view::npos ? std::string_view() : h.substr(1, close - 1);
  } else if (const std::size_t colon = h.find(':'); colon != std::string_view::npos && h.find(':', colon + 1) == std::string_view::npos) {
    name = h.substr(0, colon);  // name:port (a bare v6 address has several colons and no port)
  }
  std::string out = lower(name);
  if (!out.empty() && out.back() == '.') out.pop_back();  // "localhost." is the same name
  return out;
}

bool host_allowed(std::string_view host_header, const HostPolicy& policy) {
  if (host_header.empty()) return true;
  const std::string name = host_name_of(host_header);
  if (name.empty()) return false;
  if (name == "localhost" || ends_with(name, ".localhost") || is_ip_literal(name)) return true;
  if (name == host_name_of(policy.listen_host)) return true;
  for (const auto& allowed : policy.allowed_hosts) {
    if (allowed == "*" || name == host_name_of(allowed)) return true;
  }
  return false;
}

bool is_json_content_type(std::string_view ct) {
  const std::size_t semi = ct.find(';');
  std::string type = lower(ct.substr(0, semi));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.erase(0, 1);
  return type == "application/json" || (type.rfind("application/", 0) == 0 && ends_with(type, "+json"));
}

}  // namespace ringlm::server
