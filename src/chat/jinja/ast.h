// Syntax tree of a parsed Jinja template. One node struct per category (expression,
// statement) with a kind tag; fields unused by a kind stay empty. Every node keeps the byte
// offset of its first token so runtime errors can name a line and column.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chat/jinja/value.h"

namespace ringlm::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : std::uint8_t {
  Literal,    // literal
  Name,       // name
  List,       // args = items
  Tuple,      // args = items
  Dict,       // args = key0, value0, key1, value1, ...
  Attr,       // a.name
  Subscript,  // a[b]
  Slice,      // a[b:c:d]; b, c, d may be null
  Call,       // a(args) with arg_names ("" = positional)
  Filter,     // a | name(args); a may be null inside {% filter %} blocks
  Test,       // a is [not] name(args)
  Not,        // not a
  Neg,        // -a
  Pos,        // +a
  Binary,     // a op b  (op: + - * / // % ** ~)
  And,        // a and b
  Or,         // a or b
  Compare,    // a op0 b op1 c ... (ops: == != < <= > >= in notin)
  Cond,       // b if a else c; c may be null
};

struct Expr {
  ExprKind kind;
  std::size_t offset = 0;
  Value literal;
  std::string name;              // Name, Attr, Filter, Test; Binary operator
  bool negate = false;           // Test: `is not`
  ExprPtr a, b, c, d;            // operands (see ExprKind)
  std::vector<ExprPtr> args;     // items / call, filter or test arguments
  std::vector<std::string> arg_names;
  std::vector<std::string> ops;  // Compare operators
  std::uint32_t height = 1;      // levels of the tree below and including this node (parser-bounded)
};

enum class StmtKind : std::uint8_t {
  Text,         // text
  Output,       // {{ expr }}
  If,           // conditions[i] -> bodies[i]; else_body
  For,          // targets in expr [if cond] body [else else_body]
  Set,          // targets (or namespace target + attr) = expr
  SetBlock,     // {% set target %}body{% endset %}, optional filter chain in expr
  Macro,        // name(params=defaults) body
  CallBlock,    // {% call(params) expr %}body{% endcall %}
  FilterBlock,  // {% filter f %}body{% endfilter %}: expr is the filter chain
  Do,           // {% do expr %}
  Break,
  Continue,
  Scope,        // a body rendered in place ({% generation %})
};

struct Stmt {
  StmtKind kind;
  std::size_t offset = 0;
  std::string text;                  // Text; Macro name; Set: namespace attribute
  ExprPtr expr;                      // Output, For iterable, Set value, CallBlock call, filters
  ExprPtr cond;                      // For filter condition
  std::vector<ExprPtr> conditions;   // If
  std::vector<Body> bodies;          // If branches
  Body body, else_body;
  std::vector<std::string> targets;  // For / Set names (Set with text: targets[0] is the namespace)
  std::vector<std::string> params;   // Macro / CallBlock parameter names
  std::vector<ExprPtr> defaults;     // parallel to params; null = no default
  bool uses_varargs = false, uses_kwargs = false, uses_caller = false;
  bool uses_loop = false;  // For: the body reads `loop` (else the loop object is not built)
};

}  // namespace ringlm::jinja
