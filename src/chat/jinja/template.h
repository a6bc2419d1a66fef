// A parsed Jinja template, ready to render many times. This is the interpreter's public
// entry point; see docs/chat.md for the supported language subset.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "chat/jinja/ast.h"
#include "chat/jinja/evaluator.h"
#include "chat/jinja/lexer.h"
#include "chat/jinja/value.h"

namespace ringlm::jinja {

class Template {
 public:
  // Parses `source`. Syntax errors, unknown tags and unknown filter or test names throw
  // ringlm::Error "<name>: line L, column C: <what>".
  explicit Template(std::string_view source, std::string name = "template");

  // Renders with the variables of `context` (a dict). Runtime errors (type errors,
  // raise_exception, exceeded limits) throw ringlm::Error with the line and column.
  std::string render(const Value& context, const RenderLimits& limits = {}) const;
  std::string render(const nlohmann::ordered_json& context, const RenderLimits& limits = {}) const;

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  LexedTemplate lexed_;
  Body body_;
};

}  // namespace ringlm::jinja
