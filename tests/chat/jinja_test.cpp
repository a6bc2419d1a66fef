// Jinja interpreter: Python Jinja2 reference outputs, error reporting with line and column,
// and robustness against malformed or runaway templates.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "chat/jinja/template.h"
#include "util/error.h"
#include "../cpu_time.h"

using ringlm::jinja::RenderLimits;
using ringlm::jinja::Template;
using json = nlohmann::ordered_json;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string render(const std::string& src, const json& ctx = json::object(), const RenderLimits& limits = {}) {
  return Template(src, "t.jinja").render(ctx, limits);
}

// The ringlm::Error message of rendering (or parsing) `src`, or "" if it rendered.
std::string error_of(const std::string& src, const json& ctx = json::object(), const RenderLimits& limits = {}) {
  try {
    render(src, ctx, limits);
  } catch (const ringlm::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Outputs recorded from Python Jinja2 3.1.6 in transformers' configuration (see
// tests/chat/data/make_python_cases.py): value printing, filters, tests, methods, loops,
// macros, call/filter blocks, scoping and whitespace control.
TEST(Jinja, MatchesPythonJinja2Reference) {
  std::ifstream in(std::string(RINGLM_SOURCE_DIR) + "/tests/chat/data/jinja2_cases.jsonl");
  ASSERT_TRUE(in) << "missing jinja2_cases.jsonl";
  std::vector<json> cases;
  json ctx;
  std::string line;
  while (std::getline(in, line)) {
    auto j = json::parse(line);
    if (j.contains("ctx")) ctx = j["ctx"];
    else cases.push_back(j);
  }
  ASSERT_GE(cases.size(), 15u);
  for (const auto& c : cases) {
    const std::string src = c["t"].get<std::string>();
    std::string out;
    try {
      out = render(src, ctx);
    } catch (const ringlm::Error& e) {
      out = std::string("ERROR: ") + e.what();
    }
    EXPECT_EQ(out, c["out"].get<std::string>()) << "template: " << src;
  }
}

TEST(Jinja, GemmaGoldenConversationsRenderExactly) {
  const std::string dir = std::string(RINGLM_TOKENIZER_DIR);
  Template tmpl(read_file(dir + "/chat_template.jinja"), "chat_template.jinja");
  std::ifstream in(std::string(RINGLM_TEST_DATA_DIR) + "/tokenizer/chat-golden.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    auto c = json::parse(line);
    json ctx = c["input"];
    ctx["add_generation_prompt"] = c["add_generation_prompt"];
    ctx["enable_thinking"] = c["enable_thinking"];
    ctx["bos_token"] = "<bos>";
    EXPECT_EQ(tmpl.render(ctx), c["text"].get<std::string>()) << line;
    ++n;
  }
  EXPECT_GE(n, 4);
}

TEST(Jinja, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("ab\n{% if x %}\nyes"), "t.jinja: line 2, column 1: unclosed 'if' block (missing 'endif')");
  EXPECT_EQ(error_of("{{ x | nosuchfilter }}"), "t.jinja: line 1, column 8: no filter named 'nosuchfilter'");
  EXPECT_EQ(error_of("\n  {{ x is nosuchtest }}"), "t.jinja: line 2, column 8: no test named 'nosuchtest'");
  EXPECT_EQ(error_of("{% frobnicate %}"), "t.jinja: line 1, column 4: unknown tag 'frobnicate'");
  EXPECT_EQ(error_of("{% endfor %}"), "t.jinja: line 1, column 4: unexpected 'endfor' (no open block it could close)");
  EXPECT_EQ(error_of("x {{ a"), "t.jinja: line 1, column 3: unclosed tag '{{'");
  EXPECT_EQ(error_of("x {# never closed"), "t.jinja: line 1, column 3: unclosed comment '{#'");
  EXPECT_EQ(error_of("{{ 'abc }}"), "t.jinja: line 1, column 4: unterminated string literal");
  EXPECT_EQ(error_of("{{ a + }}"), "t.jinja: line 1, column 8: expected an expression, got '}}'");
  EXPECT_EQ(error_of("{% for x in y %}{% endif %}"), "t.jinja: line 1, column 20: unexpected 'endif' (no open block it could close)");
  EXPECT_EQ(error_of("{% break %}"), "t.jinja: line 1, column 4: 'break' outside of a loop");
  EXPECT_EQ(error_of("{{ a ]}}"), "t.jinja: line 1, column 6: unexpected ']'");
  EXPECT_EQ(error_of("{{ f(a=1, 2) }}"), "t.jinja: line 1, column 11: positional argument follows keyword argument");
}

TEST(Jinja, RuntimeErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("line\n  {{ 'a' + 1 }}"), "t.jinja: line 2, column 10: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(error_of("{{ raise_exception('bad role') }}"), "t.jinja: line 1, column 4: raise_exception: bad role");
  EXPECT_EQ(error_of("{{ 1 // 0 }}"), "t.jinja: line 1, column 6: integer division or modulo by zero");
  EXPECT_EQ(error_of("{% for a, b in [1] %}{% endfor %}"),
            "t.jinja: line 1, column 1: 'int' object is not iterable");
  EXPECT_EQ(error_of("{% set x = 1 %}{% set x.y = 2 %}"),
            "t.jinja: line 1, column 16: cannot assign attribute 'y' on 'x': not a namespace()");
  EXPECT_EQ(error_of("{{ nothing() }}"), "t.jinja: line 1, column 4: call of an undefined value");
  EXPECT_EQ(error_of("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"),
            "t.jinja: line 1, column 34: macro 'm' takes not more than 1 argument(s)");
  EXPECT_EQ(error_of("{{ 9223372036854775807 + 1 }}"), "t.jinja: line 1, column 24: integer overflow in +");
  EXPECT_EQ(error_of("{{ 1 < 'a' }}"), "t.jinja: line 1, column 4: '<' not supported between instances of 'int' and 'str'");
}

TEST(Jinja, UndefinedValuesAreLenient) {
  // Like transformers' default Undefined: missing keys print as "" and test as undefined.
  json ctx = {{"m", {{"role", "user"}}}};
  EXPECT_EQ(render("[{{ m.content }}][{{ m['x'] }}][{{ m.content is defined }}][{{ m.content | default('d') }}]", ctx),
            "[][][False][d]");
  EXPECT_EQ(render("{{ missing.deeper.still | length }}{% for x in missing %}x{% endfor %}"), "0");
}

TEST(Jinja, RunawayTemplatesHitLimitsInsteadOfHanging) {
  RenderLimits limits;
  limits.max_steps = 100000;
  limits.max_output_bytes = 1 << 20;
  limits.max_call_depth = 50;
  EXPECT_NE(error_of("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", json::object(), limits)
                .find("steps"),
            std::string::npos);
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", json::object(), limits).find("nested deeper"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                     json::object(), limits)
                .find("larger than"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 100000000000 }}", json::object(), limits).find("larger than"), std::string::npos);
  EXPECT_NE(error_of("{{ range(10000000000) | length }}", json::object(), limits).find("too large"), std::string::npos);
  // Fuzz findings: a format width padded to a gigabyte (or 100 GB: an uncaught bad_alloc) before
  // any limit saw it, and digit runs past int64 / size_t threw std::out_of_range out of the
  // interpreter. Each is now a clear error or an ordinary lookup.
  EXPECT_NE(error_of("{{ '%999999999s' % 'a' }}", json::object(), limits).find("is over 4096"), std::string::npos);
  EXPECT_NE(error_of("{{ '%.99999999s' % 'a' }}", json::object(), limits).find("is over 4096"), std::string::npos);
  EXPECT_NE(error_of("{{ '%99999d' % 1 }}", json::object(), limits).find("is over 4096"), std::string::npos);
  EXPECT_EQ(render("{{ '%4096s' % 'x' }}").size(), 4096u);
  EXPECT_EQ(render("[{{ '%-5s|%05d|%.2f|%8.3e' % ('ab', 42, 3.14159, 1234.5) }}]"), "[ab   |00042|3.14|1.234e+03]");
  EXPECT_NE(error_of("{{ '{99999999999999999999999}'.format(1) }}").find("too large"), std::string::npos);
  EXPECT_EQ(render("{{ '{1}{0}'.format('a', 'b') }}"), "ba");
  EXPECT_EQ(render("{{ [{'a': 1}] | map(attribute='99999999999999999999999') | list | length }}"), "1");
  // A namespace stored inside itself cannot be printed, but must not overflow the stack.
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}").find("nested deeper"), std::string::npos);
}

// The default macro-depth limit must trip before the native stack runs out (this test also
// runs under ASan, whose frames are several times larger).
TEST(Jinja, DefaultRecursionLimitStopsBeforeTheStackDoes) {
  const std::string src =
      "{% macro f(n) %}{% if n is number %}{% for x in [n] %}{{ f(x + 1) | trim }}{% endfor %}{% endif %}"
      "{% endmacro %}{{ f(0) }}";
  EXPECT_NE(error_of(src).find("nested deeper than 200"), std::string::npos);
}

TEST(Jinja, DeepNestingIsRejectedNotCrashing) {
  std::string deep_parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_NE(error_of(deep_parens).find("nested too deeply"), std::string::npos);
  std::string deep_ifs;
  for (int i = 0; i < 5000; ++i) deep_ifs += "{% if true %}";
  EXPECT_NE(error_of(deep_ifs).find("nested too deeply"), std::string::npos);
  std::string deep_not = "{{ " + [] { std::string s; for (int i = 0; i < 5000; ++i) s += "not "; return s; }() + "1 }}";
  EXPECT_NE(error_of(deep_not).find("nested too deeply"), std::string::npos);
}

TEST(Jinja, LongChainsAreRejectedNotCrashing) {
  // Chains built by the parser's loops, not its recursion: these crashed template, run and
  // serve with SIGSEGV (stack overflow while evaluating or destroying the tree).
  auto repeat = [](const std::string& unit, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += unit;
    return s;
  };
  const std::vector<std::string> chains = {
      "{{ 1" + repeat(" + 1", 15000) + " }}",
      "{{ 'a'" + repeat(" ~ 'a'", 15000) + " }}",
      "{{ x" + repeat("|string", 20000) + " }}",
      "{{ x" + repeat(".a", 20000) + " }}",
      "{{ x" + repeat("[0]", 20000) + " }}",
      "{{ f" + repeat("()", 20000) + " }}",
      "{{ 1" + repeat(" or 1", 15000) + " }}",
      "{{ 2" + repeat(" ** 1", 15000) + " }}",
      "{% set y = 1" + repeat(" * 1", 15000) + " %}",
      "{{ [" + repeat("[", 150) + "1" + repeat(" + 1", 400) + repeat("]", 150) + "] }}",
  };
  for (const auto& src : chains) {
    const std::string err = error_of(src);
    EXPECT_NE(err.find("t.jinja: line 1"), std::string::npos) << src.substr(0, 40) << ": " << err;
    EXPECT_NE(err.find("nested too deeply"), std::string::npos) << src.substr(0, 40) << ": " << err;
  }
  // Ordinary lengths still work.
  EXPECT_EQ(render("{{ 1" + repeat(" + 1", 300) + " }}"), "301");
  EXPECT_EQ(render("{{ 'x'" + repeat("|upper", 100) + " }}"), "X");
}

TEST(Jinja, QuadraticTemplatesHitTheWorkLimit) {
  // Under the step and output limits, but each iteration copies the whole string so far.
  RenderLimits limits;
  limits.max_work_bytes = 64u << 20;
  const std::string src =
      "{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ 'xxxxxxxxxx' %}{% endfor %}"
      "{{ ns.s | length }}";
  const std::string err = error_of(src, json::object(), limits);
  EXPECT_NE(err.find("t.jinja"), std::string::npos) << err;
  EXPECT_NE(err.find("intermediate values"), std::string::npos) << err;
  // The same loop with a small count is fine.
  EXPECT_EQ(render("{% set ns = namespace(s='') %}{% for i in range(100) %}{% set ns.s = ns.s ~ 'x' %}{% endfor %}"
                   "{{ ns.s | length }}"),
            "100");
}

// Random byte edits of the real Gemma template: each must either render or fail with a
// ringlm::Error; anything else (crash, other exception, hang) fails the test.
TEST(Jinja, MutatedTemplatesFailCleanly) {
  const std::string base = read_file(std::string(RINGLM_TOKENIZER_DIR) + "/chat_template.jinja");
  ASSERT_FALSE(base.empty());
  json ctx = json::parse(R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "x", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"a": [1, {"b": null}]}}}]},
    {"role": "tool", "tool_call_id": "c", "content": "r"}],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
      "parameters": {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}}}],
    "add_generation_prompt": true, "enable_thinking": true, "bos_token": "<bos>"})");
  std::mt19937 rng(1234);
  const std::string alphabet = "{}%#-+()[]|.,:'\"~=<>!*/ \nabcxyz019_";
  RenderLimits limits;
  limits.max_steps = 200000;
  int rendered = 0, rejected = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string src = base;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      std::size_t pos = rng() % src.size();
      switch (rng() % 3) {
        case 0: src[pos] = alphabet[rng() % alphabet.size()]; break;
        case 1: src.erase(pos, 1 + rng() % 8); break;
        default: src.insert(pos, 1, alphabet[rng() % alphabet.size()]);
      }
    }
    try {
      Template(src, "mutated").render(ctx, limits);
      ++rendered;
    } catch (const ringlm::Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 50);
  EXPECT_GT(rendered, 20);
}

// Issue #28: a request's message objects go whole into the template's context; turning an
// object of N keys into a Jinja value searched the keys for each insert (N^2). 131k keys
// (a 1 MB request body) now convert in linear time, keys in order.
TEST(Jinja, ContextObjectsWithManyKeysConvertInLinearTime) {
  json junk = json::object();
  auto& members = *junk.get_ptr<json::object_t*>();  // appended directly: building it is linear too
  for (int i = 0; i < 131072; ++i) members.emplace_back("k" + std::to_string(i), i);
  json ctx = {{"m", {{"role", "user"}, {"junk", junk}}}};
  // CPU time of this thread, not wall time: a loaded host (ctest -j2) must not fail the bound.
  std::string out;
  const double s = ringlm::testing::thread_cpu_seconds_of(
      [&] { out = render("{{ m.role }} {{ m.junk.k131071 }} {{ m.junk | length }}", ctx); });
  std::printf("131072-key context object rendered in %.3f s of CPU\n", s);
  EXPECT_EQ(out, "user 131071 131072");
  EXPECT_LT(s, 2.0);
}
