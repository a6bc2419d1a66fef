// Built-in filters, tests, global functions, attribute access and the methods of str, dict
// and list values (Python's, as chat templates call them: `s.split(',')`, `d.get('k')`).
#pragma once

#include <string_view>

#include "chat/jinja/evaluator.h"
#include "chat/jinja/value.h"

namespace ringlm::jinja {

bool has_filter(std::string_view name);
bool has_test(std::string_view name);

Value apply_filter(Evaluator& ev, std::string_view name, const Value& operand, CallArgs& args);
bool apply_test(Evaluator& ev, std::string_view name, const Value& operand, CallArgs& args);

// `obj.name`: a dict key, a namespace attribute, or a bound method; undefined if none.
Value get_attribute(Evaluator& ev, const Value& obj, std::string_view name);
// `obj[key]`: list/str index (negative from the end), dict key; undefined if missing.
Value get_item(Evaluator& ev, const Value& obj, const Value& key);

// Global functions: range, namespace, dict, raise_exception, strftime_now, joiner, cycler.
void add_globals(Evaluator& ev, Scope& scope);

// Items of an iterable value as a list (list items, dict keys, str code points);
// undefined iterates as empty. Throws for other types.
Array iterate(const Value& v);

}  // namespace ringlm::jinja
