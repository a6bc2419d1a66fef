// An HTTP API failure in the OpenAI shape: {"error":{"message","type","param","code"}}.
// Thrown by request parsing and the route handlers, turned into a response by the server.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace ringlm::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = "", std::string code = "",
           std::string type = "")
      : std::runtime_error(message),
        status_(status),
        param_(std::move(param)),
        code_(std::move(code)),
        type_(type.empty() ? default_type(status) : std::move(type)) {}

  int status() const { return status_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  const std::string& type() const { return type_; }

  nlohmann::ordered_json to_json() const { return error_body(what(), type_, param_, code_); }

  // The error object shared by every failure response (param/code null when empty).
  static nlohmann::ordered_json error_body(const std::string& message, const std::string& type,
                                   const std::string& param, const std::string& code) {
    nlohmann::ordered_json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
    if (!param.empty()) e["param"] = param;
    if (!code.empty()) e["code"] = code;
    return {{"error", e}};
  }

  static std::string default_type(int status) {
    if (status == 429) return "rate_limit_error";
    if (status >= 500) return "server_error";
    return "invalid_request_error";
  }

 private:
  int status_;
  std::string param_, code_, type_;
};

}  // namespace ringlm::server
