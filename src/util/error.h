// ringlm error reporting: every failure a user can cause is an ringlm::Error whose
// message names the file, tensor, field or byte offset at fault (one line, no trailing dot).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace ringlm {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message) : std::runtime_error(std::move(message)) {}
};

// Throws ringlm::Error with the concatenation of the arguments (streamable values).
template <typename... Args>
[[noreturn]] void fail(Args&&... args);

}  // namespace ringlm

#include <sstream>

namespace ringlm {
template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  throw Error(os.str());
}
}  // namespace ringlm
