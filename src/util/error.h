// ringlm error reporting: every failure a user can cause is an ringlm::Error whose
// message names the file, tensor, field or byte offset at fault (one line, no trailing dot).
//
// An Error carries a kind, so the two front ends decide once how a failure is reported:
// exit_code() below for the CLI, server/api_error.h for HTTP statuses. Code that throws says
// what went wrong (fail_as(ErrorKind::invalid_model_file, ...)); nobody downstream guesses.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ringlm {

enum class ErrorKind {
  invalid_argument,    // the caller asked for something malformed or out of range (the default)
  invalid_model_file,  // a checkpoint, GGUF, packed model, tokenizer or config file is malformed
  unsupported,         // well-formed, but a feature or format this build does not implement
  resource_limit,      // a size, depth or count bound was reached (context, schema states ...)
  io,                  // the operating system refused: open, read, write, map, socket
  internal,            // a broken invariant inside ringlm: a bug, never the user's fault
};

// The kind's name as it appears in logs and tests ("invalid_model_file").
constexpr const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_argument: return "invalid_argument";
    case ErrorKind::invalid_model_file: return "invalid_model_file";
    case ErrorKind::unsupported: return "unsupported";
    case ErrorKind::resource_limit: return "resource_limit";
    case ErrorKind::io: return "io";
    case ErrorKind::internal: return "internal";
  }
  return "internal";
}

// The process exit status of a CLI command that ends with this kind of error. Everything a
// user can fix exits 1; a ringlm bug exits 2 (as does an exception that is not an Error).
constexpr int exit_code(ErrorKind kind) { return kind == ErrorKind::internal ? 2 : 1; }

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, ErrorKind kind = ErrorKind::invalid_argument,
                 std::string param = "")
      : std::runtime_error(std::move(message)), kind_(kind), param_(std::move(param)) {}

  ErrorKind kind() const { return kind_; }
  // The request parameter at fault ("response_format"), when the thrower knows it; empty
  // otherwise. The HTTP server reports it as the OpenAI error's "param".
  const std::string& param() const { return param_; }

 private:
  ErrorKind kind_;
  std::string param_;
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

// Throws ringlm::Error (kind invalid_argument) with the concatenation of the arguments.
template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(detail::concat(std::forward<Args>(args)...));
}

// Throws ringlm::Error of the given kind with the concatenation of the arguments.
template <typename... Args>
[[noreturn]] void fail_as(ErrorKind kind, Args&&... args) {
  throw Error(detail::concat(std::forward<Args>(args)...), kind);
}

// Shorthands for the kinds other than invalid_argument, so a throw site reads as its kind.
template <typename... Args>
[[noreturn]] void fail_model_file(Args&&... args) {
  fail_as(ErrorKind::invalid_model_file, std::forward<Args>(args)...);
}
template <typename... Args>
[[noreturn]] void fail_unsupported(Args&&... args) {
  fail_as(ErrorKind::unsupported, std::forward<Args>(args)...);
}
template <typename... Args>
[[noreturn]] void fail_limit(Args&&... args) {
  fail_as(ErrorKind::resource_limit, std::forward<Args>(args)...);
}
template <typename... Args>
[[noreturn]] void fail_io(Args&&... args) {
  fail_as(ErrorKind::io, std::forward<Args>(args)...);
}
template <typename... Args>
[[noreturn]] void fail_internal(Args&&... args) {
  fail_as(ErrorKind::internal, std::forward<Args>(args)...);
}

// Rethrows `e` with `param` attached (keeping message and kind) unless it already names one.
[[noreturn]] inline void rethrow_with_param(const Error& e, const std::string& param) {
  throw Error(e.what(), e.kind(), e.param().empty() ? param : e.param());
}

}  // namespace ringlm
