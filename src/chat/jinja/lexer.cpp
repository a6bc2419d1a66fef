#include "chat/jinja/lexer.h"

#include <charconv>
#include <cstring>

#include "chat/jinja/text.h"
#include "util/error.h"
#include "util/utf8.h"

namespace ringlm::jinja {

std::pair<int, int> line_column(std::string_view source, std::size_t offset) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

namespace {

class Lexer {
 public:
  Lexer(std::string source, const std::string& name) : src_(std::move(source)), name_(name) {}

  LexedTemplate run() {
    while (pos_ < src_.size()) {
      std::size_t tag = find_tag(pos_);
      std::string text = src_.substr(pos_, (tag == std::string::npos ? src_.size() : tag) - pos_);
      if (tag == std::string::npos) {
        push_text(std::move(text), pos_);
        pos_ = src_.size();
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char modifier = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (modifier == '-') {
        text = text::strip(text, false, true);
      } else if (kind != '{' && modifier != '+') {
        lstrip_block_indent(text, tag);
      }
      push_text(std::move(text), pos_);
      if (kind == '#') {
        lex_comment(tag);
      } else {
        lex_tag(tag, kind);
      }
    }
    tokens_.push_back(Token{TokenType::End, "", 0, 0, src_.size()});
    return LexedTemplate{std::move(src_), std::move(tokens_)};
  }

 private:
  [[noreturn]] void error(std::size_t offset, const std::string& msg) const {
    auto [line, column] = line_column(src_, offset);
    fail(name_, ": line ", line, ", column ", column, ": ", msg);
  }

  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void push_text(std::string text, std::size_t offset) {
    if (!text.empty()) tokens_.push_back(Token{TokenType::Text, std::move(text), 0, 0, offset});
  }

  // lstrip_blocks: spaces and tabs between the start of a line and a block or comment tag
  // are removed (not when anything else precedes the tag on that line).
  void lstrip_block_indent(std::string& text, std::size_t tag) const {
    std::size_t run = 0;
    while (run < text.size() && (text[text.size() - 1 - run] == ' ' || text[text.size() - 1 - run] == '\t')) ++run;
    std::size_t start = tag - run;  // offset in src_ where the blank run begins
    if (start == 0 || src_[start - 1] == '\n') text.resize(text.size() - run);
  }

  void skip_whitespace_after() {
    // `-%}` / `-}}` / `-#}`: strip all whitespace that follows.
    while (pos_ < src_.size()) {
      std::size_t n = 1;
      char32_t c = static_cast<unsigned char>(src_[pos_]);
      if (c >= 0x80) {  // one whole character, or one invalid byte (not whitespace)
        n = utf8::char_len(src_, pos_);
        c = n ? utf8::decode_at(src_, pos_, n) : 0xFFFD;
        if (n == 0) n = 1;
      }
      if (!text::is_space(c)) break;
      pos_ += n;
    }
  }

  void lex_comment(std::size_t tag) {
    std::size_t end = src_.find("#}", tag + 2);
    if (end == std::string::npos) error(tag, "unclosed comment '{#'");
    bool strip_after = end > tag + 2 && src_[end - 1] == '-' && end - 1 > tag + 2;
    bool keep = end > tag + 2 && src_[end - 1] == '+';
    pos_ = end + 2;
    if (strip_after) {
      skip_whitespace_after();
    } else if (!keep && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;  // trim_blocks
    }
  }

  void lex_tag(std::size_t tag, char kind) {
    const bool block = kind == '%';
    tokens_.push_back(Token{block ? TokenType::BlockBegin : TokenType::VarBegin, "", 0, 0, tag});
    const std::size_t first_token = tokens_.size();
    pos_ = tag + 2;
    if (pos_ < src_.size() && (src_[pos_] == '-' || src_[pos_] == '+')) ++pos_;
    int depth = 0;
    while (true) {
      while (pos_ < src_.size() && std::strchr(" \t\r\n\f\v", src_[pos_]) && src_[pos_] != '\0') ++pos_;
      if (pos_ >= src_.size()) error(tag, block ? "unclosed tag '{%'" : "unclosed tag '{{'");
      if (depth == 0) {
        const char* close = block ? "%}" : "}}";
        auto at = [&](const char* s) { return src_.compare(pos_, std::strlen(s), s) == 0; };
        char m = src_[pos_];
        if ((m == '-' || m == '+') && pos_ + 2 < src_.size() + 1 && src_.compare(pos_ + 1, 2, close) == 0) {
          tokens_.push_back(Token{block ? TokenType::BlockEnd : TokenType::VarEnd, "", 0, 0, pos_});
          pos_ += 3;
          if (m == '-') skip_whitespace_after();
          break;
        }
        if (at(close)) {
          tokens_.push_back(Token{block ? TokenType::BlockEnd : TokenType::VarEnd, "", 0, 0, pos_});
          pos_ += 2;
          if (block && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;  // trim_blocks
          break;
        }
      }
      lex_expression_token(depth);
    }
    // `{% raw %}`: everything up to `{% endraw %}` is text.
    if (block && tokens_.size() == first_token + 2 && tokens_[first_token].type == TokenType::Name &&
        tokens_[first_token].value == "raw") {
      tokens_.resize(first_token - 1);
      lex_raw_body(tag);
    }
  }

  void lex_raw_body(std::size_t tag) {
    std::size_t search = pos_;
    while (true) {
      std::size_t open = src_.find("{%", search);
      if (open == std::string::npos) error(tag, "unclosed 'raw' block");
      std::size_t p = open + 2;
      bool strip_before = p < src_.size() && src_[p] == '-';
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
      while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n')) ++p;
      if (src_.compare(p, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      p += 6;
      while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n')) ++p;
      char m = p < src_.size() ? src_[p] : '\0';
      if (m == '-' || m == '+') ++p;
      if (src_.compare(p, 2, "%}") != 0) {
        search = open + 2;
        continue;
      }
      std::string body = src_.substr(pos_, open - pos_);
      if (strip_before) body = text::strip(body, false, true);
      else lstrip_block_indent(body, open);
      push_text(std::move(body), pos_);
      pos_ = p + 2;
      if (m == '-') skip_whitespace_after();
      else if (m != '+' && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
      return;
    }
  }

  static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  void lex_expression_token(int& depth) {
    const std::size_t start = pos_;
    const char c = src_[pos_];
    if (is_name_start(c)) {
      while (pos_ < src_.size() && (is_name_start(src_[pos_]) || is_digit(src_[pos_]))) ++pos_;
      tokens_.push_back(Token{TokenType::Name, src_.substr(start, pos_ - start), 0, 0, start});
      return;
    }
    if (is_digit(c)) {
      lex_number();
      return;
    }
    if (c == '\'' || c == '"') {
      lex_string();
      return;
    }
    static const char* const kOperators[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%",
                                             "~",  "<",  ">",  "=",  "(",  ")",  "[", "]", "{", "}", ",",
                                             ".",  ":",  "|"};
    for (const char* op : kOperators) {
      std::size_t n = std::strlen(op);
      if (src_.compare(pos_, n, op) == 0) {
        if (n == 1 && std::strchr("([{", op[0])) ++depth;
        if (n == 1 && std::strchr(")]}", op[0])) {
          if (depth == 0) error(start, std::string("unexpected '") + op + "'");
          --depth;
        }
        tokens_.push_back(Token{TokenType::Operator, op, 0, 0, start});
        pos_ += n;
        return;
      }
    }
    error(start, std::string("unexpected character '") + c + "'");
  }

  void lex_number() {
    const std::size_t start = pos_;
    std::string digits;
    auto take_digits = [&] {
      while (pos_ < src_.size() && (is_digit(src_[pos_]) || (src_[pos_] == '_' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1])))) {
        if (src_[pos_] != '_') digits.push_back(src_[pos_]);
        ++pos_;
      }
    };
    take_digits();
    bool is_float = false;
    bool after_dot = !tokens_.empty() && tokens_.back().type == TokenType::Operator && tokens_.back().value == ".";
    if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
      is_float = true;
      digits.push_back('.');
      ++pos_;
      take_digits();
    }
    if (!after_dot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      std::size_t save = pos_;
      std::string save_digits = digits;
      digits.push_back('e');
      ++pos_;
      if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) digits.push_back(src_[pos_++]);
      if (pos_ < src_.size() && is_digit(src_[pos_])) {
        is_float = true;
        take_digits();
      } else {
        pos_ = save;
        digits = save_digits;
      }
    }
    Token t{is_float ? TokenType::Float : TokenType::Integer, digits, 0, 0, start};
    if (is_float) {
      t.float_value = std::strtod(digits.c_str(), nullptr);
    } else {
      auto res = std::from_chars(digits.data(), digits.data() + digits.size(), t.int_value);
      if (res.ec != std::errc()) error(start, "integer literal out of range");
    }
    tokens_.push_back(std::move(t));
  }

  void lex_string() {
    const std::size_t start = pos_;
    const char quote = src_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) error(start, "unterminated string literal");
      char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= src_.size()) error(start, "unterminated string literal");
      char e = src_[pos_++];
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case 'a': out.push_back('\a'); break;
        case '0': out.push_back('\0'); break;
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case '\n': break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (pos_ + n > src_.size()) error(pos_ - 2, "truncated \\" + std::string(1, e) + " escape");
          std::uint32_t cp = 0;
          for (int k = 0; k < n; ++k) {
            char h = src_[pos_ + k];
            int d = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
            if (d < 0) error(pos_ - 2, "invalid \\" + std::string(1, e) + " escape");
            cp = cp * 16 + static_cast<std::uint32_t>(d);
          }
          if (cp > 0x10FFFF) error(pos_ - 2, "escape out of Unicode range");
          pos_ += n;
          utf8::append(out, cp);
          break;
        }
        default:  // Python keeps unknown escapes verbatim
          out.push_back('\\');
          out.push_back(e);
      }
    }
    tokens_.push_back(Token{TokenType::String, std::move(out), 0, 0, start});
  }

  std::string src_;
  const std::string& name_;
  std::size_t pos_ = 0;
  std::vector<Token> tokens_;
};

std::string normalise_newlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  // keep_trailing_newline=False: a single trailing newline is dropped.
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

LexedTemplate lex(std::string_view source, const std::string& name) {
  return Lexer(normalise_newlines(source), name).run();
}

}  // namespace ringlm::jinja
