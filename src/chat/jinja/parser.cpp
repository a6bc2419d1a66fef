#include "chat/jinja/parser.h"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "util/error.h"

namespace ringlm::jinja {

namespace {

// Deepest expression / block nesting accepted; deeper input is rejected rather than risking
// the native stack.
constexpr int kMaxNesting = 200;
constexpr std::uint32_t kMaxHeight = 500;   // levels of one expression tree

class Parser {
 public:
  Parser(const LexedTemplate& lexed, const std::string& name) : lexed_(lexed), toks_(lexed.tokens), name_(name) {}

  Body parse_template() {
    Body body = parse_body({}, nullptr);
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(std::size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool is_op(const char* op) const { return cur().type == TokenType::Operator && cur().value == op; }
  bool is_name(const char* n) const { return cur().type == TokenType::Name && cur().value == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    advance();
    return true;
  }

  [[noreturn]] void error_at(std::size_t offset, const std::string& msg) const {
    auto [line, column] = line_column(lexed_.source, offset);
    fail(name_, ": line ", line, ", column ", column, ": ", msg);
  }

  std::string describe(const Token& t) const {
    switch (t.type) {
      case TokenType::End: return "end of template";
      case TokenType::BlockEnd: return "'%}'";
      case TokenType::VarEnd: return "'}}'";
      case TokenType::BlockBegin: return "'{%'";
      case TokenType::VarBegin: return "'{{'";
      case TokenType::Text: return "text";
      case TokenType::String: return "string literal";
      case TokenType::Integer:
      case TokenType::Float: return "number '" + t.value + "'";
      default: return "'" + t.value + "'";
    }
  }

  [[noreturn]] void unexpected(const std::string& expected) const {
    error_at(cur().offset, "expected " + expected + ", got " + describe(cur()));
  }

  void expect_op(const char* op) {
    if (!skip_op(op)) unexpected(std::string("'") + op + "'");
  }
  std::string expect_name() {
    if (cur().type != TokenType::Name) unexpected("a name");
    std::string n = cur().value;
    advance();
    return n;
  }
  void expect_block_end() {
    if (cur().type != TokenType::BlockEnd) unexpected("'%}'");
    advance();
  }

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.error_at(p.cur().offset, "template nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
  };

  ExprPtr make(ExprKind kind, std::size_t offset) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->offset = offset;
    return e;
  }

  // Records a finished node's height (its children are finished first) and refuses trees taller
  // than kMaxHeight. Evaluating and destroying an expression recurse once per level, and chains
  // built by loops here (`1 + 1 + ...`, `x|f|f|...`, `a.b.c...`, `f()()...`) are not bounded by
  // the recursion guard: a 15,000-term sum used to overflow the stack.
  ExprPtr seal(ExprPtr e) {
    std::uint32_t h = 0;
    for (const ExprPtr* c : {&e->a, &e->b, &e->c, &e->d})
      if (*c) h = std::max(h, (*c)->height);
    for (const auto& c : e->args)
      if (c) h = std::max(h, c->height);
    e->height = h + 1;
    if (e->height > kMaxHeight)
      error_at(e->offset, "expression nested too deeply (more than " + std::to_string(kMaxHeight) +
                              " levels of operators, filters, attributes, subscripts or calls)");
    return e;
  }

  // ---- statements ----

  // Parses statements until a block tag whose first name is in `end_tags` (the tag's
  // `{%` and name are consumed; the name is stored in *ended_by) or the end of the template.
  Body parse_body(std::initializer_list<const char*> end_tags, std::string* ended_by, std::size_t open_offset = 0,
                  const char* open_tag = nullptr) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      switch (t.type) {
        case TokenType::End:
          if (end_tags.size() != 0)
            error_at(open_offset, std::string("unclosed '") + open_tag + "' block (missing 'end" + open_tag + "')");
          return body;
        case TokenType::Text: {
          auto s = std::make_unique<Stmt>();
          s->kind = StmtKind::Text;
          s->offset = t.offset;
          s->text = t.value;
          body.push_back(std::move(s));
          advance();
          break;
        }
        case TokenType::VarBegin: {
          auto s = std::make_unique<Stmt>();
          s->kind = StmtKind::Output;
          s->offset = t.offset;
          advance();
          s->expr = parse_tuple_expression();
          if (cur().type != TokenType::VarEnd) unexpected("'}}'");
          advance();
          body.push_back(std::move(s));
          break;
        }
        case TokenType::BlockBegin: {
          const Token& tag = peek();
          if (tag.type != TokenType::Name) error_at(tag.offset, "expected a tag name after '{%'");
          for (const char* end : end_tags) {
            if (tag.value == end) {
              advance();
              advance();
              *ended_by = tag.value;
              return body;
            }
          }
          std::size_t offset = t.offset;
          advance();
          body.push_back(parse_statement(offset));
          break;
        }
        default:
          unexpected("text or a tag");
      }
    }
  }

  StmtPtr parse_statement(std::size_t offset) {
    const Token& tag = cur();
    const std::string name = tag.value;
    advance();
    auto s = std::make_unique<Stmt>();
    s->offset = offset;
    if (name == "if") return parse_if(std::move(s));
    if (name == "for") return parse_for(std::move(s));
    if (name == "set") return parse_set(std::move(s));
    if (name == "macro") return parse_macro(std::move(s));
    if (name == "call") return parse_call_block(std::move(s));
    if (name == "filter") return parse_filter_block(std::move(s));
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) error_at(tag.offset, "'" + name + "' outside of a loop");
      s->kind = name == "break" ? StmtKind::Break : StmtKind::Continue;
      expect_block_end();
      return s;
    }
    if (name == "do") {
      s->kind = StmtKind::Do;
      s->expr = parse_tuple_expression();
      expect_block_end();
      return s;
    }
    if (name == "generation") {
      s->kind = StmtKind::Scope;
      expect_block_end();
      std::string ended;
      s->body = parse_body({"endgeneration"}, &ended, offset, "generation");
      expect_block_end();
      return s;
    }
    static const char* const kEndTags[] = {"endif", "endfor", "endset", "endmacro", "endcall", "endfilter",
                                           "elif",  "else",   "endgeneration", "endraw"};
    for (const char* end : kEndTags)
      if (name == end) error_at(tag.offset, "unexpected '" + name + "' (no open block it could close)");
    error_at(tag.offset, "unknown tag '" + name + "'");
  }

  StmtPtr parse_if(StmtPtr s) {
    s->kind = StmtKind::If;
    const std::size_t open = s->offset;
    s->conditions.push_back(parse_tuple_expression());
    expect_block_end();
    while (true) {
      std::string ended;
      Body body = parse_body({"elif", "else", "endif"}, &ended, open, "if");
      s->bodies.push_back(std::move(body));
      if (ended == "elif") {
        s->conditions.push_back(parse_tuple_expression());
        expect_block_end();
        continue;
      }
      if (ended == "else") {
        expect_block_end();
        std::string ended2;
        s->else_body = parse_body({"endif"}, &ended2, open, "if");
      }
      expect_block_end();
      return s;
    }
  }

  void parse_targets(std::vector<std::string>& targets) {
    bool paren = skip_op("(");
    do {
      targets.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
  }

  StmtPtr parse_for(StmtPtr s) {
    s->kind = StmtKind::For;
    const std::size_t open = s->offset;
    parse_targets(s->targets);
    if (!skip_name("in")) unexpected("'in'");
    s->expr = parse_or();
    if (is_op(",")) {
      // `for x in a, b` iterates over a tuple.
      auto tuple = make(ExprKind::Tuple, s->expr->offset);
      tuple->args.push_back(std::move(s->expr));
      while (skip_op(",")) {
        if (cur().type == TokenType::BlockEnd || is_name("if")) break;
        tuple->args.push_back(parse_or());
      }
      s->expr = std::move(tuple);
    }
    if (skip_name("if")) s->cond = parse_expression();
    skip_name("recursive");
    expect_block_end();
    ++loop_depth_;
    loop_stack_.push_back(s.get());
    std::string ended;
    s->body = parse_body({"else", "endfor"}, &ended, open, "for");
    loop_stack_.pop_back();
    --loop_depth_;
    if (ended == "else") {
      expect_block_end();
      std::string ended2;
      s->else_body = parse_body({"endfor"}, &ended2, open, "for");
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(StmtPtr s) {
    const std::size_t open = s->offset;
    std::string first = expect_name();
    if (skip_op(".")) {
      s->targets.push_back(first);
      s->text = expect_name();
    } else {
      s->targets.push_back(first);
      while (skip_op(",")) s->targets.push_back(expect_name());
    }
    if (skip_op("=")) {
      s->kind = StmtKind::Set;
      s->expr = parse_tuple_expression();
      expect_block_end();
      return s;
    }
    if (s->targets.size() != 1) unexpected("'='");
    s->kind = StmtKind::SetBlock;
    if (is_op("|")) s->expr = parse_filter_chain(nullptr);
    expect_block_end();
    std::string ended;
    s->body = parse_body({"endset"}, &ended, open, "set");
    expect_block_end();
    return s;
  }

  void parse_params(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      if (!s.params.empty()) expect_op(",");
      if (is_op(")")) break;
      s.params.push_back(expect_name());
      s.defaults.push_back(skip_op("=") ? parse_expression() : nullptr);
    }
    expect_op(")");
  }

  StmtPtr parse_macro(StmtPtr s) {
    s->kind = StmtKind::Macro;
    const std::size_t open = s->offset;
    s->text = expect_name();
    parse_params(*s);
    expect_block_end();
    auto saved = special_names_;
    special_names_ = {};
    std::string ended;
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_body({"endmacro"}, &ended, open, "macro");
    loop_depth_ = saved_loops;
    s->uses_varargs = special_names_.varargs;
    s->uses_kwargs = special_names_.kwargs;
    s->uses_caller = special_names_.caller;
    special_names_ = saved;
    if (cur().type == TokenType::Name && cur().value == s->text) advance();  // {% endmacro name %}
    expect_block_end();
    return s;
  }

  StmtPtr parse_call_block(StmtPtr s) {
    s->kind = StmtKind::CallBlock;
    const std::size_t open = s->offset;
    if (is_op("(")) parse_params(*s);
    s->expr = parse_expression();
    if (s->expr->kind != ExprKind::Call) error_at(s->expr->offset, "expected a macro call after 'call'");
    expect_block_end();
    std::string ended;
    s->body = parse_body({"endcall"}, &ended, open, "call");
    expect_block_end();
    return s;
  }

  StmtPtr parse_filter_block(StmtPtr s) {
    s->kind = StmtKind::FilterBlock;
    const std::size_t open = s->offset;
    s->expr = parse_filter_chain(nullptr, /*leading_pipe=*/false);
    expect_block_end();
    std::string ended;
    s->body = parse_body({"endfilter"}, &ended, open, "filter");
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  // An expression that may be a bare tuple: `{{ a, b }}`, `{% set x = 1, 2 %}`.
  ExprPtr parse_tuple_expression() {
    std::size_t offset = cur().offset;
    ExprPtr first = parse_expression();
    if (!is_op(",")) return seal(std::move(first));
    auto tuple = make(ExprKind::Tuple, offset);
    tuple->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (cur().type == TokenType::BlockEnd || cur().type == TokenType::VarEnd) break;
      tuple->args.push_back(parse_expression());
    }
    return seal(std::move(tuple));
  }

  ExprPtr parse_expression() {
    DepthGuard guard(*this);
    std::size_t offset = cur().offset;
    ExprPtr expr = parse_or();
    while (skip_name("if")) {
      auto cond = make(ExprKind::Cond, offset);
      cond->a = parse_or();
      cond->b = std::move(expr);
      if (skip_name("else")) cond->c = parse_expression();
      expr = seal(std::move(cond));
    }
    return seal(std::move(expr));
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      auto e = make(ExprKind::Or, cur().offset);
      advance();
      e->a = std::move(left);
      e->b = parse_and();
      left = seal(std::move(e));
    }
    return seal(std::move(left));
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      auto e = make(ExprKind::And, cur().offset);
      advance();
      e->a = std::move(left);
      e->b = parse_not();
      left = seal(std::move(e));
    }
    return seal(std::move(left));
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      auto e = make(ExprKind::Not, cur().offset);
      advance();
      e->a = parse_not();
      return seal(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    std::size_t offset = cur().offset;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().type == TokenType::Operator &&
          (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
           cur().value == ">" || cur().value == ">=")) {
        op = cur().value;
        advance();
      } else if (is_name("in")) {
        op = "in";
        advance();
      } else if (is_name("not") && peek().type == TokenType::Name && peek().value == "in") {
        op = "notin";
        advance();
        advance();
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(ExprKind::Compare, offset);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? seal(std::move(cmp)) : std::move(first);
  }

  ExprPtr binary(ExprPtr left, const std::string& op, ExprPtr right, std::size_t offset) {
    auto e = make(ExprKind::Binary, offset);
    e->name = op;
    e->a = std::move(left);
    e->b = std::move(right);
    return seal(std::move(e));
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = cur().value;
      std::size_t offset = cur().offset;
      advance();
      left = binary(std::move(left), op, parse_concat(), offset);
    }
    return seal(std::move(left));
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      std::size_t offset = cur().offset;
      advance();
      left = binary(std::move(left), "~", parse_math2(), offset);
    }
    return seal(std::move(left));
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = cur().value;
      std::size_t offset = cur().offset;
      advance();
      left = binary(std::move(left), op, parse_pow(), offset);
    }
    return seal(std::move(left));
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      std::size_t offset = cur().offset;
      advance();
      left = binary(std::move(left), "**", parse_unary(true), offset);
    }
    return seal(std::move(left));
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      node = make(is_op("-") ? ExprKind::Neg : ExprKind::Pos, cur().offset);
      advance();
      node->a = parse_unary(false);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return seal(std::move(node));
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    std::size_t offset = t.offset;
    switch (t.type) {
      case TokenType::Name: {
        auto e = make(ExprKind::Literal, offset);
        if (t.value == "true" || t.value == "True") e->literal = Value::boolean(true);
        else if (t.value == "false" || t.value == "False") e->literal = Value::boolean(false);
        else if (t.value == "none" || t.value == "None") e->literal = Value::none();
        else {
          e->kind = ExprKind::Name;
          e->name = t.value;
          if (t.value == "varargs") special_names_.varargs = true;
          if (t.value == "kwargs") special_names_.kwargs = true;
          if (t.value == "caller") special_names_.caller = true;
          if (t.value == "loop" && !loop_stack_.empty()) loop_stack_.back()->uses_loop = true;
        }
        advance();
        return seal(std::move(e));
      }
      case TokenType::String: {
        std::string s = t.value;
        advance();
        while (cur().type == TokenType::String) {  // adjacent literals concatenate
          s += cur().value;
          advance();
        }
        auto e = make(ExprKind::Literal, offset);
        e->literal = Value::string(std::move(s));
        return seal(std::move(e));
      }
      case TokenType::Integer: {
        auto e = make(ExprKind::Literal, offset);
        e->literal = Value::integer(t.int_value);
        advance();
        return seal(std::move(e));
      }
      case TokenType::Float: {
        auto e = make(ExprKind::Literal, offset);
        e->literal = Value::floating(t.float_value);
        advance();
        return seal(std::move(e));
      }
      case TokenType::Operator:
        if (t.value == "(") {
          advance();
          if (skip_op(")")) return seal(make(ExprKind::Tuple, offset));
          ExprPtr first = parse_expression();
          if (skip_op(")")) return seal(std::move(first));
          auto tuple = make(ExprKind::Tuple, offset);
          tuple->args.push_back(std::move(first));
          while (skip_op(",")) {
            if (is_op(")")) break;
            tuple->args.push_back(parse_expression());
          }
          expect_op(")");
          return seal(std::move(tuple));
        }
        if (t.value == "[") {
          advance();
          auto list = make(ExprKind::List, offset);
          while (!is_op("]")) {
            if (!list->args.empty()) expect_op(",");
            if (is_op("]")) break;
            list->args.push_back(parse_expression());
          }
          expect_op("]");
          return seal(std::move(list));
        }
        if (t.value == "{") {
          advance();
          auto dict = make(ExprKind::Dict, offset);
          while (!is_op("}")) {
            if (!dict->args.empty()) expect_op(",");
            if (is_op("}")) break;
            dict->args.push_back(parse_expression());
            expect_op(":");
            dict->args.push_back(parse_expression());
          }
          expect_op("}");
          return seal(std::move(dict));
        }
        break;
      default:
        break;
    }
    unexpected("an expression");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        std::size_t offset = cur().offset;
        advance();
        if (cur().type == TokenType::Integer) {
          auto e = make(ExprKind::Subscript, offset);
          e->a = std::move(node);
          e->b = make(ExprKind::Literal, cur().offset);
          e->b->literal = Value::integer(cur().int_value);
          advance();
          node = seal(std::move(e));
          continue;
        }
        auto e = make(ExprKind::Attr, offset);
        e->a = std::move(node);
        e->name = expect_name();
        node = seal(std::move(e));
      } else if (is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return seal(std::move(node));
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    std::size_t offset = cur().offset;
    advance();  // [
    ExprPtr start, stop, step;
    bool slice = false;
    if (!is_op(":")) start = parse_expression();
    if (skip_op(":")) {
      slice = true;
      if (!is_op("]") && !is_op(":")) stop = parse_expression();
      if (skip_op(":") && !is_op("]")) step = parse_expression();
    }
    expect_op("]");
    auto e = make(slice ? ExprKind::Slice : ExprKind::Subscript, offset);
    e->a = std::move(node);
    e->b = std::move(start);
    e->c = std::move(stop);
    e->d = std::move(step);
    return seal(std::move(e));
  }

  void parse_args(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (!e.args.empty()) expect_op(",");
      if (is_op(")")) break;
      if (cur().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == "=") {
        e.arg_names.push_back(cur().value);
        advance();
        advance();
      } else {
        for (const auto& n : e.arg_names)
          if (!n.empty()) error_at(cur().offset, "positional argument follows keyword argument");
        e.arg_names.emplace_back();
      }
      e.args.push_back(parse_expression());
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(ExprKind::Call, node->offset);  // errors point at the callee
    e->a = std::move(node);
    parse_args(*e);
    return seal(std::move(e));
  }

  ExprPtr parse_filter_chain(ExprPtr operand, bool leading_pipe = true) {
    bool first = true;
    while (first ? (!leading_pipe || is_op("|")) : is_op("|")) {
      if (leading_pipe || !first) advance();  // '|'
      first = false;
      auto e = make(ExprKind::Filter, cur().offset);
      e->name = expect_name();
      while (skip_op(".")) e->name += "." + expect_name();
      if (is_op("(")) parse_args(*e);
      e->a = std::move(operand);
      operand = seal(std::move(e));
    }
    return seal(std::move(operand));
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filter_chain(std::move(node));
      } else if (is_name("is")) {
        auto e = make(ExprKind::Test, cur().offset);
        advance();
        if (skip_name("not")) e->negate = true;
        e->name = expect_name();
        while (skip_op(".")) e->name += "." + expect_name();
        if (is_op("(")) {
          parse_args(*e);
        } else if ((cur().type == TokenType::Name && cur().value != "else" && cur().value != "or" &&
                    cur().value != "and" && cur().value != "if" && cur().value != "is" && cur().value != "in" &&
                    cur().value != "not") ||
                   cur().type == TokenType::String || cur().type == TokenType::Integer ||
                   cur().type == TokenType::Float || is_op("[") || is_op("{")) {
          // `x is divisibleby 3`, `x is sameas none`: one argument without parentheses.
          e->args.push_back(parse_postfix(parse_primary()));
          e->arg_names.emplace_back();
        }
        e->a = std::move(node);
        node = seal(std::move(e));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return seal(std::move(node));
      }
    }
  }

  struct SpecialNames {
    bool varargs = false, kwargs = false, caller = false;
  };

  const LexedTemplate& lexed_;
  const std::vector<Token>& toks_;
  const std::string& name_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  SpecialNames special_names_;
  std::vector<Stmt*> loop_stack_;  // for-loops whose body is being parsed, innermost last
};

}  // namespace

Body parse(const LexedTemplate& lexed, const std::string& name) { return Parser(lexed, name).parse_template(); }

}  // namespace ringlm::jinja
