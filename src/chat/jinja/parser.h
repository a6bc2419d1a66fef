// Jinja parser: tokens -> statement tree. Follows Jinja2's grammar and operator precedence
// (ternary < or < and < not < comparison < + - < ~ < * / // % < ** < unary < filters/tests <
// postfix). Syntax errors throw ringlm::Error with the line and column of the offending token.
#pragma once

#include <string>

#include "chat/jinja/ast.h"
#include "chat/jinja/lexer.h"

namespace ringlm::jinja {

Body parse(const LexedTemplate& lexed, const std::string& name);

}  // namespace ringlm::jinja
