// Errors inside the Jinja interpreter. Value helpers throw RuntimeError without a location;
// the evaluator adds the line and column of the expression being evaluated and turns it into
// a ringlm::Error, the only error type that leaves the interpreter.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ringlm::jinja {

class RuntimeError : public std::runtime_error {
 public:
  explicit RuntimeError(std::string message) : std::runtime_error(std::move(message)) {}
};

template <typename... Args>
[[noreturn]] void runtime_fail(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  throw RuntimeError(os.str());
}

// A source position: 1-based line and column (column counts bytes).
struct SourcePos {
  int line = 1;
  int column = 1;
};

}  // namespace ringlm::jinja
