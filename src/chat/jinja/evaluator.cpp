#include "chat/jinja/evaluator.h"

#include <cmath>
#include <limits>

#include "chat/jinja/builtins.h"
#include "chat/jinja/error.h"
#include "chat/jinja/lexer.h"
#include "chat/jinja/operators.h"
#include "util/error.h"

namespace ringlm::jinja {

const Value* Scope::lookup(std::string_view name) const {
  for (const Scope* s = this; s; s = s->parent.get())
    for (const auto& [k, v] : s->vars)
      if (k == name) return &v;
  return nullptr;
}

void Scope::set(const std::string& name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(name, std::move(value));
}

Evaluator::Evaluator(const std::string& source, const std::string& name, const RenderLimits& limits)
    : source_(source), name_(name), limits_(limits) {}

Evaluator::~Evaluator() {
  for (auto& ns : namespaces_) ns.as_object().items.clear();
}

void Evaluator::fail_at(std::size_t offset, const std::string& msg) const {
  auto [line, column] = line_column(source_, offset);
  fail(name_, ": line ", line, ", column ", column, ": ", msg);
}

void Evaluator::check_size(std::size_t bytes) const {
  if (bytes > limits_.max_output_bytes)
    runtime_fail("output larger than the limit of ", limits_.max_output_bytes, " bytes");
}

void Evaluator::count_step() {
  if (++steps_ > limits_.max_steps)
    runtime_fail("template ran more than ", limits_.max_steps, " steps (endless or runaway loop?)");
}

void Evaluator::render(const Body& body, const ScopePtr& scope, std::string& out) {
  Flow flow = exec_body(body, scope, out);
  (void)flow;  // break/continue outside loops are rejected by the parser
}

Evaluator::Flow Evaluator::exec_body(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const auto& s : body) {
    Flow flow = exec(*s, scope, out);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Evaluator::Flow Evaluator::exec(const Stmt& s, const ScopePtr& scope, std::string& out) {
  try {
    count_step();
    switch (s.kind) {
      case StmtKind::Text:
        out += s.text;
        check_size(out.size());
        return Flow::Normal;
      case StmtKind::Output: {
        Value v = eval(*s.expr, scope);
        if (v.is_string()) out += v.as_string();
        else out += v.str();
        check_size(out.size());
        return Flow::Normal;
      }
      case StmtKind::If:
        for (std::size_t i = 0; i < s.conditions.size(); ++i)
          if (eval(*s.conditions[i], scope).truthy()) return exec_body(s.bodies[i], scope, out);
        return exec_body(s.else_body, scope, out);
      case StmtKind::For:
        return exec_for(s, scope, out);
      case StmtKind::Set:
        exec_set(s, scope, eval(*s.expr, scope));
        return Flow::Normal;
      case StmtKind::SetBlock: {
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        std::string captured;
        exec_body(s.body, inner, captured);
        Value v = Value::string(std::move(captured));
        if (s.expr) v = apply_filter_expr(*s.expr, std::move(v), scope);
        exec_set(s, scope, std::move(v));
        return Flow::Normal;
      }
      case StmtKind::Macro:
        scope->set(s.text, make_macro(s, scope, s.text));
        return Flow::Normal;
      case StmtKind::CallBlock: {
        const Expr& call_expr = *s.expr;
        Value callee = eval(*call_expr.a, scope);
        CallArgs args = eval_args(call_expr, scope);
        args.caller = std::make_shared<const Value>(make_macro(s, scope, "caller"));
        Value result = call(callee, args);
        out += result.str();
        check_size(out.size());
        return Flow::Normal;
      }
      case StmtKind::FilterBlock: {
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        std::string captured;
        exec_body(s.body, inner, captured);
        out += apply_filter_expr(*s.expr, Value::string(std::move(captured)), scope).str();
        check_size(out.size());
        return Flow::Normal;
      }
      case StmtKind::Do:
        eval(*s.expr, scope);
        return Flow::Normal;
      case StmtKind::Break:
        return Flow::Break;
      case StmtKind::Continue:
        return Flow::Continue;
      case StmtKind::Scope:
        return exec_body(s.body, scope, out);
    }
  } catch (const RuntimeError& e) {
    fail_at(s.offset, e.what());
  }
  return Flow::Normal;
}

static void bind_targets(const std::vector<std::string>& targets, const Value& item, Scope& scope) {
  if (targets.size() == 1) {
    scope.set(targets[0], item);
    return;
  }
  Array parts = iterate(item);
  if (parts.size() != targets.size())
    runtime_fail(parts.size() < targets.size() ? "not enough" : "too many", " values to unpack (expected ",
                 targets.size(), ", got ", parts.size(), ")");
  for (std::size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], parts[i]);
}

Evaluator::Flow Evaluator::exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  Value iterable = eval(*s.expr, scope);
  Array items = iterate(iterable);
  if (s.cond) {
    Array kept;
    for (auto& item : items) {
      count_step();
      auto probe = std::make_shared<Scope>();
      probe->parent = scope;
      bind_targets(s.targets, item, *probe);
      if (eval(*s.cond, probe).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    exec_body(s.else_body, inner, out);
    return Flow::Normal;
  }
  const auto n = static_cast<std::int64_t>(items.size());
  for (std::int64_t i = 0; i < n; ++i) {
    count_step();
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    if (s.uses_loop) add_loop_object(*inner, items, i);
    bind_targets(s.targets, items[i], *inner);
    Flow flow = exec_body(s.body, inner, out);
    if (flow == Flow::Break) break;
  }
  return Flow::Normal;
}

void Evaluator::add_loop_object(Scope& scope, const Array& items, std::int64_t i) {
  const auto n = static_cast<std::int64_t>(items.size());
  {
    Object loop;
    loop.set("index", Value::integer(i + 1));
    loop.set("index0", Value::integer(i));
    loop.set("revindex", Value::integer(n - i));
    loop.set("revindex0", Value::integer(n - i - 1));
    loop.set("first", Value::boolean(i == 0));
    loop.set("last", Value::boolean(i == n - 1));
    loop.set("length", Value::integer(n));
    loop.set("depth", Value::integer(1));
    loop.set("depth0", Value::integer(0));
    loop.set("previtem", i > 0 ? items[i - 1] : Value());
    loop.set("nextitem", i + 1 < n ? items[i + 1] : Value());
    loop.set("cycle", Value::function("cycle", [i](CallArgs& a) -> Value {
               if (a.positional.empty()) runtime_fail("loop.cycle() needs at least one argument");
               return a.positional[static_cast<std::size_t>(i) % a.positional.size()];
             }));
    scope.set("loop", Value::object(std::move(loop)));
  }
}

void Evaluator::exec_set(const Stmt& s, const ScopePtr& scope, Value value) {
  if (!s.text.empty()) {
    const Value* target = scope->lookup(s.targets[0]);
    if (!target || !target->is_object() || !target->as_object().is_namespace)
      runtime_fail("cannot assign attribute '", s.text, "' on '", s.targets[0], "': not a namespace()");
    const_cast<Value*>(target)->as_object().set(s.text, std::move(value));
    return;
  }
  bind_targets(s.targets, value, *scope);
}

Value Evaluator::make_macro(const Stmt& s, const ScopePtr& scope, const std::string& name) {
  std::weak_ptr<Scope> weak = scope;
  const Stmt* node = &s;
  return Value::function(name, [this, node, weak, name](CallArgs& args) -> Value {
    ScopePtr closure = weak.lock();
    if (!closure) runtime_fail("macro '", name, "' called after its defining scope ended");
    if (call_depth_ >= limits_.max_call_depth)
      runtime_fail("macro calls nested deeper than ", limits_.max_call_depth, " (runaway recursion?)");
    auto frame = std::make_shared<Scope>();
    frame->parent = closure;
    std::vector<std::pair<std::string, Value>> kwargs = args.keyword;
    std::vector<std::size_t> pending_defaults;
    for (std::size_t i = 0; i < node->params.size(); ++i) {
      const std::string& p = node->params[i];
      if (i < args.positional.size()) {
        for (const auto& [k, v] : kwargs)
          if (k == p) runtime_fail("macro '", name, "' got multiple values for argument '", p, "'");
        frame->set(p, args.positional[i]);
        continue;
      }
      bool found = false;
      for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
        if (it->first == p) {
          frame->set(p, it->second);
          kwargs.erase(it);
          found = true;
          break;
        }
      }
      if (!found) {
        frame->set(p, Value());
        if (node->defaults[i]) pending_defaults.push_back(i);
      }
    }
    if (args.positional.size() > node->params.size()) {
      if (!node->uses_varargs)
        runtime_fail("macro '", name, "' takes not more than ", node->params.size(), " argument(s)");
      frame->set("varargs", Value::tuple(Array(args.positional.begin() + static_cast<std::ptrdiff_t>(node->params.size()),
                                               args.positional.end())));
    } else if (node->uses_varargs) {
      frame->set("varargs", Value::tuple({}));
    }
    if (!kwargs.empty() && !node->uses_kwargs)
      runtime_fail("macro '", name, "' takes no keyword argument '", kwargs.front().first, "'");
    if (node->uses_kwargs) {
      Object kw;
      for (auto& [k, v] : kwargs) kw.set(k, v);
      frame->set("kwargs", Value::object(std::move(kw)));
    }
    if (args.caller) frame->set("caller", *args.caller);
    for (std::size_t i : pending_defaults) frame->set(node->params[i], eval(*node->defaults[i], frame));
    ++call_depth_;
    std::string out;
    try {
      exec_body(node->body, frame, out);
    } catch (...) {
      --call_depth_;
      throw;
    }
    --call_depth_;
    return Value::string(std::move(out));
  });
}

Value Evaluator::call(const Value& fn, CallArgs& args) {
  if (!fn.is_function()) {
    if (fn.is_undefined()) runtime_fail("call of an undefined value");
    runtime_fail("'", fn.type_name(), "' object is not callable");
  }
  count_step();
  return fn.as_function().call(args);
}

Value Evaluator::eval(const Expr& e, const ScopePtr& scope) {
  try {
    Value v = eval_inner(e, scope);
    if (v.is_string()) {
      work_bytes_ += v.as_string().size();
    } else if (v.is_array()) {
      work_bytes_ += 8 * v.as_array().size();
    }
    if (work_bytes_ > limits_.max_work_bytes) {
      runtime_fail("template produced more than ", limits_.max_work_bytes,
                   " bytes of intermediate values (quadratic or runaway template?)");
    }
    return v;
  } catch (const RuntimeError& err) {
    fail_at(e.offset, err.what());
  }
}

CallArgs Evaluator::eval_args(const Expr& e, const ScopePtr& scope) {
  CallArgs args;
  for (std::size_t i = 0; i < e.args.size(); ++i) {
    Value v = eval(*e.args[i], scope);
    if (e.arg_names[i].empty()) {
      args.positional.push_back(std::move(v));
    } else {
      for (const auto& [k, old] : args.keyword)
        if (k == e.arg_names[i]) runtime_fail("keyword argument '", k, "' repeated");
      args.keyword.emplace_back(e.arg_names[i], std::move(v));
    }
  }
  return args;
}

Value Evaluator::apply_filter_expr(const Expr& e, Value operand, const ScopePtr& scope) {
  // A filter chain from a {% filter %} / {% set x | f %} tag: the innermost node has no operand.
  if (e.a) operand = apply_filter_expr(*e.a, std::move(operand), scope);
  CallArgs args = eval_args(e, scope);
  try {
    return apply_filter(*this, e.name, operand, args);
  } catch (const RuntimeError& err) {
    fail_at(e.offset, err.what());
  }
}

Value Evaluator::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::Literal:
      return e.literal;
    case ExprKind::Name: {
      const Value* v = scope->lookup(e.name);
      return v ? *v : Value();
    }
    case ExprKind::List:
    case ExprKind::Tuple: {
      Array items;
      items.reserve(e.args.size());
      for (const auto& a : e.args) items.push_back(eval(*a, scope));
      return e.kind == ExprKind::Tuple ? Value::tuple(std::move(items)) : Value::array(std::move(items));
    }
    case ExprKind::Dict: {
      Object obj;
      for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value key = eval(*e.args[i], scope);
        if (!key.is_string()) runtime_fail("dict keys must be strings, got ", key.type_name());
        obj.set(key.as_string(), eval(*e.args[i + 1], scope));
      }
      return Value::object(std::move(obj));
    }
    case ExprKind::Attr:
      return get_attribute(*this, eval(*e.a, scope), e.name);
    case ExprKind::Subscript:
      return get_item(*this, eval(*e.a, scope), eval(*e.b, scope));
    case ExprKind::Slice:
      return eval_slice(e, scope);
    case ExprKind::Call: {
      Value callee = eval(*e.a, scope);
      CallArgs args = eval_args(e, scope);
      return call(callee, args);
    }
    case ExprKind::Filter: {
      Value operand = eval(*e.a, scope);
      CallArgs args = eval_args(e, scope);
      return apply_filter(*this, e.name, operand, args);
    }
    case ExprKind::Test: {
      Value operand = eval(*e.a, scope);
      CallArgs args = eval_args(e, scope);
      bool r = apply_test(*this, e.name, operand, args);
      return Value::boolean(e.negate ? !r : r);
    }
    case ExprKind::Not:
      return Value::boolean(!eval(*e.a, scope).truthy());
    case ExprKind::Neg:
    case ExprKind::Pos: {
      Value v = eval(*e.a, scope);
      return unary_op(e.kind == ExprKind::Neg ? '-' : '+', v);
    }
    case ExprKind::Binary:
      return eval_binary(e, scope);
    case ExprKind::And: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? eval(*e.b, scope) : a;
    }
    case ExprKind::Or: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? a : eval(*e.b, scope);
    }
    case ExprKind::Compare:
      return eval_compare(e, scope);
    case ExprKind::Cond:
      if (eval(*e.a, scope).truthy()) return eval(*e.b, scope);
      return e.c ? eval(*e.c, scope) : Value();
  }
  return Value();
}

Value Evaluator::eval_binary(const Expr& e, const ScopePtr& scope) {
  Value a = eval(*e.a, scope);
  Value b = eval(*e.b, scope);
  Value r = binary_op(e.name, a, b, limits_.max_output_bytes);
  return r;
}

Value Evaluator::eval_compare(const Expr& e, const ScopePtr& scope) {
  Value left = eval(*e.args[0], scope);
  for (std::size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.args[i + 1], scope);
    if (!compare_op(e.ops[i], left, right)) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Evaluator::eval_slice(const Expr& e, const ScopePtr& scope) {
  Value obj = eval(*e.a, scope);
  auto bound = [&](const ExprPtr& p) -> std::optional<std::int64_t> {
    if (!p) return std::nullopt;
    Value v = eval(*p, scope);
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (v.is_bool()) return v.as_bool() ? 1 : 0;
    if (!v.is_int()) runtime_fail("slice indices must be integers or None, got ", v.type_name());
    return v.as_int();
  };
  return slice_value(obj, bound(e.b), bound(e.c), bound(e.d));
}

}  // namespace ringlm::jinja
