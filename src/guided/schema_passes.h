// The schema compiler's passes (internal to src/guided; the entry point is schema_compiler.h).
//
// compile_schema builds one Context, then emits the root schema's rule. Emission is driven by
// the grammar: Emitter::value asks the Normalizer what a schema is (Form: nothing, anything, a
// $ref target's rule, a union of alternatives, if/then/else cases, or a leaf node whose
// keywords are all typed assertions) and writes the grammar for that form, recursing into
// subschemas as the grammar reaches them (a $ref cycle is a rule calling itself). The IR the
// two exchange is schema_ir.h's Node.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "guided/grammar.h"
#include "guided/number_regex.h"
#include "guided/number_value.h"
#include "guided/ref_resolver.h"
#include "guided/regex.h"
#include "guided/schema_compiler.h"
#include "guided/schema_ir.h"
#include "guided/schema_keywords.h"
#include "guided/validator.h"

namespace ringlm::guided::schema {

// What one compile_schema call shares between its passes.
struct Context {
  Context(const Json& schema, const CompileOptions& options);

  Json root;
  CompileOptions options;
  const CompileLimits& limits;
  Validator validator;
  std::unique_ptr<RefResolver> refs;
  bool draft_pre2019 = false;
  bool draft4 = false;
  int draft = 2020;  // keywords newer than the declared draft are unknown there: ignored

  // JSON pointers of every subschema of the root (by address), so an error raised while
  // compiling a schema names where it is; `where` is the stack of enclosing schemas that have
  // one. Schemas built here (allOf merges, if/then cases) have none: errors inside them name
  // the nearest enclosing schema of the document.
  struct Where {
    const Json* schema;
    const std::string* pointer;
  };
  std::unordered_map<const Json*, std::string> pointers;
  std::vector<Where> where;
  std::vector<std::string> unenforced_notes;  // lenient mode: see CompiledSchema::unenforced
  int depth = 0;

  // Schemas and nodes built while compiling, at stable addresses (rules are memoised by address).
  const Json& keep(Json j);
  const Node& keep(Node n);
  // compile_regex(pattern, search semantics) once per pattern.
  const CpDfa& regex(const std::string& pattern);
  // An assertion the grammar cannot enforce exactly: refused in strict mode, recorded (checked
  // only by the validator after generation) in lenient mode.
  void unenforced(const std::string& keyword, const std::string& why);

 private:
  void index_pointers(const Json& s, const std::string& ptr);
  std::deque<Json> arena_;
  std::deque<Node> nodes_;
  std::unordered_map<std::string, CpDfa> regex_cache_;
};

// Counts nesting (Context::depth) against CompileLimits::depth for its lifetime.
struct DepthGuard {
  explicit DepthGuard(Context& cx);
  ~DepthGuard() { --d_; }
  int& d_;
};

// The normalisation pass's answer for one schema: what the emitter must generate.
struct Form {
  enum Kind {
    kNothing,      // false: no value
    kAnything,     // true
    kCall,         // `schema`: a $ref target, emitted as a call of its (memoised) rule
    kInline,       // `schema` (of the document: errors name it) or `node`: emitted in place
    kUnion,        // each of `alternatives`, each AND `rest` unless `plain`
    kConditional,  // `rest` with the if/then/else `clauses`, split into cases
    kLeaf,         // `schema` with `extras`: no $ref, combinator or conditional left
  } kind = kLeaf;
  const Json* schema = nullptr;
  const Extras* extras = nullptr;
  const Node* node = nullptr;
  Node rest;
  std::vector<const Json*> alternatives;
  bool plain = false;
  std::vector<Json> clauses;
  // "oneOf" / "not" when normalisation built this form from a negation (schema_negate.cpp): the
  // emitter refuses it, naming that keyword, past kNegationStatesPerNode x
  // CompileLimits::negation_size grammar states.
  const char* negated = nullptr;
};

// Grammar states one negation-built form may add, per subschema CompileLimits::negation_size
// allows it (25,600 at the defaults): bounds the copies of a branch that exclusivity makes.
inline constexpr size_t kNegationStatesPerNode = 100;

// if/then/else clauses whose `if` only tests properties of an object (`properties` with
// const/enum values or one other schema per property, `required`, `type: object`): the
// instances are split into disjoint cases by what each tested property is (absent, one class of
// values, any other value; or matching / not matching its schema) and, for objects not being
// one, the type. In each case every `if` has a known outcome, so the case is the schema AND the
// case's constraints AND the chosen then/else branches: an exact union. Other `if` forms are
// refused as unsupported.
struct ConditionalGroup {
  struct Clause {
    bool always = false, never = false;  // boolean `if`
    bool needs_object = false;
    std::vector<std::string> required;
    std::vector<std::pair<std::string, const Json*>> tests;  // property -> schema
    const Json* then_s = nullptr;
    const Json* else_s = nullptr;
  };
  struct PropCase {
    // kValues: one of `values`; kOther: none of `values` (all tested values) and, with a schema
    // test, matching it (match) or not.
    enum Kind { kAbsent, kPresent, kValues, kOther } kind;
    Json values;
    std::set<size_t> holds;        // clauses whose test on this property holds in this case
    const Json* schema = nullptr;  // kOther: the (one) non-value test, if any
    bool match = false;
  };
  std::vector<Clause> clauses;
  std::vector<std::string> props;             // tested names, in first-seen order
  std::vector<std::vector<PropCase>> cases;   // per tested name
  size_t combinations = 1;
};

// One case of an if/then/else group: the allOf of the schema and `parts`. `negates`: the case
// needs the negation of a tested value or schema (a `not` the grammar may not express).
struct ConditionalCase {
  std::vector<Json> parts;
  bool negates = false;
};

// What is known of the instances a negation applies to (schema_negate.cpp): every one satisfies
// each of `parts` (a oneOf branch and the schema around it, or the schema around a `not`), so
// has one of `types`, and as an object has only keys from `keys` when that is set (a part with
// `additionalProperties: false`). Disjuncts outside it are left out of the negation.
struct NegationContext {
  std::set<std::string> types = {"null", "boolean", "integer", "number", "string", "array", "object"};
  std::optional<std::set<std::string>> keys;
  std::vector<const Json*> parts;
};

class Normalizer {
 public:
  explicit Normalizer(Context& cx) : cx_(cx) {}

  Form normalize(const Json& s, const Extras& x);
  // Follows $ref while the schema is a bare reference (2019+: $ref with assertion siblings is
  // an allOf, returned as it is; `extra_siblings`: the node's extras count as siblings).
  const Json& deref(const Json& s, bool extra_siblings = false);
  // `rest` AND a member of anyOf/oneOf.
  Node with_member(const Node& rest, const Json& member);
  // `rest` AND every part: one if/then/else case.
  Node all_of(const Node& rest, const std::vector<Json>& parts);

  // schema_conditionals.cpp: the clauses parsed and each tested property's cases; then the
  // object cases (every combination, in order) and the one case of the values that are not
  // objects (none when the schema only allows objects).
  ConditionalGroup conditional_group(const std::vector<Json>& clauses);
  std::vector<ConditionalCase> object_cases(const ConditionalGroup& g);
  std::optional<ConditionalCase> non_object_case(const ConditionalGroup& g, const Node& rest);

  // schema_negate.cpp: NOT s as a schema the emitter compiles exactly (its `not`s only the forms
  // Emitter::apply_not handles), for the instances of context c; nullopt with *why when it has
  // no such form or would exceed CompileLimits::negation_size / negation_depth.
  std::optional<Json> negation(const Json& s, const NegationContext& c, std::string* why);
  NegationContext negation_context(const std::vector<const Json*>& parts);
  // The alternatives a schema expands into at its top level (anyOf: the sum, allOf: the product).
  static size_t alternatives(const Json& s);

 private:
  Form leaf_form(const Json& s, const Extras& x);
  bool is_conditional(const Json& s, const Extras& x) const;
  Form conditional_form(const Json& s, const Extras& x);
  Form union_form(const Json& s, const Extras& x);
  std::optional<Node> with_negated_nots(const Json& s, const Extras& x);
  Json deref_for_merge(const Json& m);
  bool exclusive_one_of(const Json& alts, const Node& rest, std::vector<const Json*>& branch);
  bool negatable(const Json& n);
  std::set<std::string> value_types(const Json& s);
  bool provably_disjoint(const Json& a, const Json& b, int depth);
  ConditionalGroup::Clause parse_clause(const Json& c, std::vector<std::string>& props);
  std::vector<ConditionalGroup::PropCase> property_cases(const std::string& p,
                                                         const std::vector<ConditionalGroup::Clause>& cs);
  bool value_set(const Json& sch, Json* out);
  bool negate(const Json& s, const NegationContext& c, int depth, std::vector<Json>& out, std::string& why);
  bool negate_keywords(const Json& s, const NegationContext& c, int depth, std::vector<Json>& out, std::string& why);
  bool negate_array(const Json& s, const NegationContext& c, int depth, std::vector<Json>& out, std::string& why);
  bool negate_object(const Json& s, const NegationContext& c, int depth, std::vector<Json>& out, std::string& why);
  bool negate_other_keys(const Json& s, int depth, std::vector<Json>& out, std::string& why);
  bool negate_property_names(const Json& pn, std::vector<Json>& out, std::string& why);
  bool negate_combinators(const Json& s, const NegationContext& c, int depth, std::vector<Json>& out,
                          std::string& why);
  bool negated_union(const Json& s, const NegationContext& c, int depth, Json* out, std::string& why);
  NegationContext sub_context(const NegationContext& c, const std::string& property);
  NegationContext items_context(const NegationContext& c);
  size_t negation_nodes_ = 0;

  Context& cx_;
};

class Emitter {
 public:
  explicit Emitter(Context& cx);
  Emitter(const Emitter&) = delete;
  Emitter& operator=(const Emitter&) = delete;
  // The root schema's grammar.
  CompiledSchema run();

 private:
  // schema_emit.cpp: dispatch on the normalised form, conditionals, leaves, `not`, values.
  uint32_t rule_for(const Json& s);
  void value(const Json& s, uint32_t from, uint32_t to);
  void value(const Node& n, uint32_t from, uint32_t to);
  void value_at(const Json& s, const Extras& x, uint32_t from, uint32_t to);
  void emit_form(const Form& f, uint32_t from, uint32_t to);
  void emit_union(const Form& f, uint32_t from, uint32_t to);
  void emit_conditional(const Form& f, uint32_t from, uint32_t to);
  void emit_case(const Node& rest, const ConditionalCase& c, uint32_t from, uint32_t to);
  void leaf(const Json& s, const Extras& x, uint32_t from, uint32_t to);
  void enum_values(const Json& s, const Extras& x, uint32_t from, uint32_t to);
  void note_keys(const Json& v);
  void note_order(std::vector<std::string> names);

  // schema_emit_values.cpp: literal values, numbers matched by value (number_value.h).
  void literal_value(const Json& v, uint32_t from, uint32_t to);
  // One enum / const value, in each of its texts whose kind of number `passes` accepts.
  void enum_value(const Json& v, const std::function<bool(const Json&)>& passes, uint32_t from, uint32_t to);
  // Equal for values json_equal calls equal (numbers by value; object keys in order).
  static std::string value_key(const Json& v);
  uint32_t number_value_rule(const Json& number, bool integer_texts, bool other_texts);
  void number_spellings(const DecimalValue& v, uint32_t s, uint32_t end, bool plain_integer);
  uint32_t exponent_rule(int64_t e);
  uint32_t frac_zeros_rule(int64_t e, bool in_cap);
  uint32_t int_zeros_rule(int64_t m, int64_t k, bool plain);

  // What the `not` keywords of the schema being emitted exclude.
  struct NotInfo {
    Json values = Json::array();        // excluded scalar values (enum/const)
    std::vector<std::string> patterns;  // strings must not match these
    std::set<std::string> keys;         // properties that must be absent
    bool non_integer = false;           // draft 4 `not: {type: integer}` on numbers
  };
  void apply_not(const Json& n, std::set<std::string>& types);
  static void only_objects(std::set<std::string>& types);
  uint32_t any_rule();

  // schema_emit_scalars.cpp: numbers and strings.
  uint32_t number_rule(bool integer, const NumberBounds& nb);
  // Draft 4 `not: {type: integer}` on numbers: draft4_non_integer_texts() is the complement of
  // draft4_integer_texts(), the texts the validator parses as integers.
  uint32_t non_integer_rule(const NumberBounds& nb);
  static const CpDfa& draft4_non_integer_texts();
  static const CpDfa& draft4_integer_texts();
  const CpDfa& digit_cap(bool exponent);
  void emit_ascii_dfa(const CpDfa& dfa, uint32_t from, uint32_t to);
  void number(const Json& s, uint32_t from, uint32_t to, bool integer, bool non_integer = false);
  uint32_t multiple_rule(int64_t k);
  uint32_t multiple_number_rule(bool integer, const NumberBounds& nb, DecimalMultiple dm, bool non_integer = false);
  uint32_t plain_string_rule();
  CpDfa string_dfa(const Json& s, const Extras& x, int64_t* min_len, int64_t* max_len);
  void string_value(const Json& s, const Extras& x, uint32_t from, uint32_t to);
  uint32_t string_rule(const CpDfa& dfa, int64_t mn, int64_t mx);
  void string_body(const CpDfa& dfa, int64_t mn, int64_t mx, uint32_t start, uint32_t to);

  // schema_emit_array.cpp
  void array(const Json& s, uint32_t from, uint32_t to);
  void unique_array(const std::vector<const Json*>& prefix, const Json& rest, int64_t mn, int64_t mx,
                    uint32_t from, uint32_t to);
  int64_t distinct_strings(const Json& sch, int64_t need, bool* literals, bool* finite);
  bool string_items(const std::vector<const Json*>& prefix, const Json& rest, int64_t& mx);
  bool tracked_unique(const Json& s);
  const Json* tracked_unique_inside(const Json& s);
  std::string unique_at(const Json* array);
  // Alternatives that may share a position (anyOf / oneOf branches, if cases, contains) must not
  // mix an array whose items the Matcher keeps distinct with one whose items it does not.
  void check_tracked_alternatives(const std::vector<const Json*>& alts);

  // schema_emit_object.cpp
  struct ObjectShape;
  struct Entry;
  struct Extra;
  struct Dep;
  void object(const Json& s, uint32_t from, uint32_t to);
  static void read_object(const Json& s, ObjectShape& o);
  const Json* entry_schema(const ObjectShape& o, const std::string& name, const Json* declared);
  bool name_ok(const ObjectShape& o, const std::string& name);
  bool declared_entries(ObjectShape& o);
  bool dependency_entries(const Json& s, ObjectShape& o);
  void extra_entries(ObjectShape& o);
  void finite_extras(ObjectShape& o);
  void object_states(const Json& s, ObjectShape& o, uint32_t from, uint32_t to);
  uint32_t key_rule(const CpDfa& keys);
  struct KeyStep;
  std::vector<KeyStep> extra_steps(const ObjectShape& o);
  bool outside_some_key(const ObjectShape& o, size_t i, const std::string& name);
  void seen_variants(const ObjectShape& o, uint32_t applicable, const Json* schema,
                     std::vector<std::pair<const Json*, uint32_t>>& out);
  const CpDfa& pattern_dfa(const std::string& p);
  CpDfa names_dfa(const Json& pn, int64_t* mn, int64_t* mx);

  Context& cx_;
  Normalizer norm_;
  const CompileLimits& limits_;
  GrammarBuilder b_;
  std::unordered_map<const Json*, uint32_t> memo_;
  // The same rules by content: a schema repeated at two places of a document (the same
  // inline oneOf under two properties, say) compiles once. References resolve without a base
  // (RefResolver::resolve), so equal text means an equal language.
  std::unordered_map<std::string, uint32_t> memo_by_text_;
  std::unordered_map<std::string, uint32_t> number_rules_;
  std::unordered_map<std::string, uint32_t> case_rules_;  // if/then/else cases by content
  uint32_t any_ = kNone, plain_string_ = kNone;
  int64_t extra_min_ = 0, extra_max_ = -1;
  NotInfo not_;  // exclusions of the schema whose typed alternatives are being emitted
  int8_t doc_has_unique_ = -1;  // the document has some uniqueItems: true (-1: not looked yet)
  std::vector<std::vector<std::string>> order_;
  std::unordered_set<std::string> order_seen_;
};

}  // namespace ringlm::guided::schema
