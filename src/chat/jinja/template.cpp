#include "chat/jinja/template.h"

#include "chat/jinja/builtins.h"
#include "chat/jinja/error.h"
#include "chat/jinja/parser.h"
#include "util/error.h"

namespace ringlm::jinja {

namespace {

// Rejects unknown filter and test names at load time, so a typo in a template is reported
// when the model is loaded rather than on the first request that reaches that branch.
class NameChecker {
 public:
  NameChecker(const LexedTemplate& lexed, const std::string& name) : lexed_(lexed), name_(name) {}

  void body(const Body& b) {
    for (const auto& s : b) stmt(*s);
  }

 private:
  void stmt(const Stmt& s) {
    expr(s.expr.get());
    expr(s.cond.get());
    for (const auto& c : s.conditions) expr(c.get());
    for (const auto& d : s.defaults) expr(d.get());
    for (const auto& b : s.bodies) body(b);
    body(s.body);
    body(s.else_body);
  }

  void expr(const Expr* e) {
    if (!e) return;
    if (e->kind == ExprKind::Filter && !has_filter(e->name)) error(e->offset, "no filter named '" + e->name + "'");
    if (e->kind == ExprKind::Test && !has_test(e->name)) error(e->offset, "no test named '" + e->name + "'");
    expr(e->a.get());
    expr(e->b.get());
    expr(e->c.get());
    expr(e->d.get());
    for (const auto& x : e->args) expr(x.get());
  }

  [[noreturn]] void error(std::size_t offset, const std::string& msg) const {
    auto [line, column] = line_column(lexed_.source, offset);
    fail(name_, ": line ", line, ", column ", column, ": ", msg);
  }

  const LexedTemplate& lexed_;
  const std::string& name_;
};

}  // namespace

Template::Template(std::string_view source, std::string name) : name_(std::move(name)) {
  lexed_ = lex(source, name_);
  body_ = parse(lexed_, name_);
  NameChecker(lexed_, name_).body(body_);
}

std::string Template::render(const Value& context, const RenderLimits& limits) const {
  Evaluator ev(lexed_.source, name_, limits);
  auto globals = std::make_shared<Scope>();
  add_globals(ev, *globals);
  auto scope = std::make_shared<Scope>();
  scope->parent = globals;
  if (context.is_object()) {
    for (const auto& [k, v] : context.as_object().items) scope->set(k, v);
  } else if (!context.is_undefined() && !context.is_none()) {
    fail(name_, ": render context must be a dict, got ", context.type_name());
  }
  std::string out;
  try {
    ev.render(body_, scope, out);
  } catch (const RuntimeError& e) {
    fail(name_, ": ", e.what());
  }
  return out;
}

std::string Template::render(const nlohmann::ordered_json& context, const RenderLimits& limits) const {
  Value v;
  try {
    v = Value::from_json(context);
  } catch (const RuntimeError& e) {
    fail(name_, ": render context: ", e.what());
  }
  return render(v, limits);
}

}  // namespace ringlm::jinja
