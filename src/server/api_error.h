// An HTTP API failure in the OpenAI shape: {"error":{"message","type","param","code"}}.
// Thrown by request parsing and the route handlers, turned into a response by the server.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "util/error.h"

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

  // The one place an ringlm::Error kind becomes an HTTP status: what the request can fix is
  // 400, what the server's own files, the OS or a ringlm bug broke is 500.
  static int status_for(ErrorKind kind) {
    switch (kind) {
      case ErrorKind::invalid_argument:
      case ErrorKind::unsupported:
      case ErrorKind::resource_limit: return 400;
      case ErrorKind::invalid_model_file:
      case ErrorKind::io:
      case ErrorKind::internal: return 500;
    }
    return 500;
  }

  static std::string code_for(ErrorKind kind) {
    switch (kind) {
      case ErrorKind::invalid_argument: return "invalid_request";
      case ErrorKind::unsupported: return "unsupported";
      case ErrorKind::resource_limit: return "resource_limit";
      default: return "";
    }
  }

  // An engine or backend Error as the API reports it; `context` prefixes the message of a
  // server-side failure ("generation failed: "), `param` applies unless the Error names one.
  static ApiError from(const Error& e, const std::string& context = "", const std::string& param = "") {
    const int status = status_for(e.kind());
    std::string message = status >= 500 ? context + e.what() : std::string(e.what());
    return ApiError(status, std::move(message), e.param().empty() ? param : e.param(), code_for(e.kind()));
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
