// Jinja lexer: splits a template into text and tag tokens, applying the whitespace rules of a
// Hugging Face chat-template environment: trim_blocks and lstrip_blocks on, `-` strips all
// whitespace on that side of a tag, `+` disables lstrip/trim for that tag, one trailing
// newline of the template is dropped, and `{% raw %}` bodies are passed through as text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringlm::jinja {

enum class TokenType : std::uint8_t {
  Text,        // literal template text (value)
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,        // identifier or keyword (value)
  String,      // string literal, escapes resolved (value)
  Integer,     // integer literal (int_value)
  Float,       // float literal (float_value)
  Operator,    // operator or punctuation (value)
  End,         // end of template
};

struct Token {
  TokenType type;
  std::string value;
  std::int64_t int_value = 0;
  double float_value = 0;
  std::size_t offset = 0;  // byte offset in the normalised source
};

struct LexedTemplate {
  std::string source;  // newline-normalised source the offsets refer to
  std::vector<Token> tokens;
};

// Throws ringlm::Error "<name>: line L, column C: ..." on malformed input (unclosed tag,
// comment or string, unexpected character).
LexedTemplate lex(std::string_view source, const std::string& name);

// 1-based line and column of a byte offset in `source`.
std::pair<int, int> line_column(std::string_view source, std::size_t offset);

}  // namespace ringlm::jinja
