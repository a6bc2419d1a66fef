// The schema compiler + matcher on the official JSON-Schema-Test-Suite files of the keywords
// compiled by case analysis or counting (contains, min/maxContains, uniqueItems, if/then/else,
// dependentSchemas / dependencies, format ipv6). Each group is run through the JSONSchemaBench
// walk (run_grammar_bench, synthetic vocabulary): for every group that compiles, each valid
// instance must be accepted in some key order and each invalid one rejected in every order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "guided/grammar_bench.h"
#include "test_vocab.h"

namespace ringlm::guided {
namespace {

namespace fs = std::filesystem;

std::string suite_dir() { return std::string(RINGLM_TEST_DATA_DIR) + "/jsonschema/test-suite/tests/"; }

struct SuiteResult {
  int groups = 0, compiled = 0;
  std::vector<std::string> wrong;  // "file: group / test: reason"
};

SuiteResult run_suite_file(const std::string& rel, const char* schema_uri) {
  SuiteResult out;
  std::ifstream in(suite_dir() + rel);
  if (!in) {
    out.wrong.push_back("cannot open " + rel);
    return out;
  }
  Json groups = Json::parse(in);
  fs::path dir = fs::temp_directory_path() / ("ringlm_compiler_suite_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto vocab = testing::synthetic_vocab();
  auto encode = [&](const std::string& text) { return testing::greedy_tokenize(*vocab, text); };
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Json& g = groups[gi];
    Json schema = g["schema"];
    if (schema.is_object() && !schema.contains("$schema")) schema["$schema"] = schema_uri;
    Json doc = {{"schema", schema}, {"tests", Json::array()}};
    for (auto& t : g["tests"]) doc["tests"].push_back({{"description", t["description"]}, {"data", t["data"]}, {"valid", t["valid"]}});
    fs::path file = dir / ("group_" + std::to_string(gi) + ".json");
    std::ofstream(file) << doc.dump();
    BenchOptions opt;
    BenchReport r = run_grammar_bench({file.string()}, vocab, encode, opt);
    ++out.groups;
    out.compiled += int(r.overall.compiled);
    for (auto& f : r.failures) {
      out.wrong.push_back(rel + ": " + g["description"].get<std::string>() + " / " + f.description + ": " +
                          (f.valid ? "valid instance rejected: " : "invalid instance accepted: ") + f.reason);
    }
  }
  fs::remove_all(dir);
  return out;
}

void check(const std::string& rel, const char* uri, int min_compiled_percent) {
  SuiteResult r = run_suite_file(rel, uri);
  for (auto& w : r.wrong) ADD_FAILURE() << w;
  EXPECT_GE(r.compiled * 100, r.groups * min_compiled_percent) << rel << ": " << r.compiled << "/" << r.groups
                                                               << " groups compiled";
}

const char* k2020 = "https://json-schema.org/draft/2020-12/schema";
const char* k7 = "http://json-schema.org/draft-07/schema#";

TEST(CompilerSuite, Contains) {
  check("draft2020-12/contains.json", k2020, 70);
  check("draft2020-12/minContains.json", k2020, 70);
  check("draft2020-12/maxContains.json", k2020, 20);  // maxContains below capacity: unsupported
  check("draft7/contains.json", k7, 70);
}

TEST(CompilerSuite, UniqueItems) { check("draft2020-12/uniqueItems.json", k2020, 30); }

TEST(CompilerSuite, IfThenElse) {
  check("draft2020-12/if-then-else.json", k2020, 30);
  check("draft7/if-then-else.json", k7, 30);
}

TEST(CompilerSuite, DependentSchemas) {
  check("draft2020-12/dependentSchemas.json", k2020, 50);
  check("draft7/dependencies.json", k7, 50);
}

// enum / const: numbers compare by value (`1` and `1.0`, `0` and `-0.0` are one value), in
// values nested in arrays and objects too.
TEST(CompilerSuite, EnumAndConst) {
  const char* k4 = "http://json-schema.org/draft-04/schema#";
  for (const char* draft : {"draft2020-12", "draft7", "draft4"}) {
    const char* uri = std::string(draft) == "draft4" ? k4 : std::string(draft) == "draft7" ? k7 : k2020;
    check(std::string(draft) + "/enum.json", uri, 90);
    if (std::string(draft) != "draft4") check(std::string(draft) + "/const.json", uri, 90);
  }
}

TEST(CompilerSuite, Ipv6) { check("draft2020-12/optional/format/ipv6.json", k2020, 100); }

}  // namespace
}  // namespace ringlm::guided
