// Tree-walking evaluator for parsed templates. Scoping follows Jinja2: a for-loop iteration,
// a macro call and a `{% set %}` block body each get their own scope; `set` writes to the
// innermost scope; namespace() objects are the way to carry state out of a loop. Macros see
// the scope they were defined in (live, as Jinja2's template context).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/value.h"

namespace ringlm::jinja {

// Bounds that keep a malformed or hostile template from hanging or exhausting memory.
struct RenderLimits {
  std::size_t max_output_bytes = 64u << 20;  // any single string, and the whole output
  std::uint64_t max_steps = 50'000'000;      // statements executed + loop iterations + calls
  int max_call_depth = 200;                  // nested macro calls
  // Bytes of every string value an expression produces (strings are copied when evaluated),
  // plus 8 per item of every list: bounds quadratic templates (`s = s ~ x` in a loop) that
  // stay under the output and step limits but copy gigabytes.
  std::uint64_t max_work_bytes = std::uint64_t(2) << 30;
};

struct Scope {
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* lookup(std::string_view name) const;
  void set(const std::string& name, Value value);
};
using ScopePtr = std::shared_ptr<Scope>;

class Evaluator {
 public:
  Evaluator(const std::string& source, const std::string& name, const RenderLimits& limits);
  // Empties every namespace created during the render: namespaces are the only mutable
  // containers, so this breaks any reference cycle a template built (`ns.me = ns`).
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Registers a namespace() object for clean-up at the end of the render.
  void track_namespace(const Value& ns) { namespaces_.push_back(ns); }

  // Renders `body` in `scope`, appending to `out`.
  void render(const Body& body, const ScopePtr& scope, std::string& out);

  Value eval(const Expr& e, const ScopePtr& scope);
  // Calls a function value (macro, builtin or bound method).
  Value call(const Value& fn, CallArgs& args);
  // Throws when a produced string would exceed the output limit.
  void check_size(std::size_t bytes) const;
  void count_step();

  const RenderLimits& limits() const { return limits_; }

 private:
  enum class Flow { Normal, Break, Continue };

  Flow exec_body(const Body& body, const ScopePtr& scope, std::string& out);
  Flow exec(const Stmt& s, const ScopePtr& scope, std::string& out);
  Flow exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  void add_loop_object(Scope& scope, const Array& items, std::int64_t i);
  void exec_set(const Stmt& s, const ScopePtr& scope, Value value);
  Value make_macro(const Stmt& s, const ScopePtr& scope, const std::string& name);

  Value eval_inner(const Expr& e, const ScopePtr& scope);
  Value eval_binary(const Expr& e, const ScopePtr& scope);
  Value eval_compare(const Expr& e, const ScopePtr& scope);
  Value eval_slice(const Expr& e, const ScopePtr& scope);
  CallArgs eval_args(const Expr& e, const ScopePtr& scope);
  Value apply_filter_expr(const Expr& e, Value operand, const ScopePtr& scope);

  [[noreturn]] void fail_at(std::size_t offset, const std::string& msg) const;

  const std::string& source_;
  const std::string& name_;
  RenderLimits limits_;
  std::vector<Value> namespaces_;
  std::uint64_t steps_ = 0;
  std::uint64_t work_bytes_ = 0;
  int call_depth_ = 0;
};

}  // namespace ringlm::jinja
