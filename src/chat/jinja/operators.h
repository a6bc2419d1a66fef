// Python semantics of Jinja's operators: arithmetic (with int64 overflow detection), string
// and list concatenation/repetition, `~`, comparisons, membership and slicing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "chat/jinja/value.h"

namespace ringlm::jinja {

// op: + - * / // % ** ~ ; max_bytes bounds any string or list the operation builds.
Value binary_op(std::string_view op, const Value& a, const Value& b, std::size_t max_bytes);
Value unary_op(char op, const Value& v);
// op: == != < <= > >= in notin
bool compare_op(std::string_view op, const Value& a, const Value& b);
// Python `item in container` (undefined container: false).
bool contains(const Value& container, const Value& item);
// Python slicing of a list or str (by code point).
Value slice_value(const Value& obj, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                  std::optional<std::int64_t> step);
// Python printf-style formatting `fmt % args` (%s %r %d %i %f %e %g %x %o %c %%, with flags,
// width and precision); args is a tuple/list for several values.
std::string percent_format(const std::string& fmt, const Value& args);

}  // namespace ringlm::jinja
