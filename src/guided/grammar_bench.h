// JSONSchemaBench-style evaluation: per file compile the schema, serialise each test instance
// in the grammar's whitespace style, tokenise it and walk it through the matcher token by token
// (checking each token against the mask), then aggregate soundness, strictness and timings.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "guided/json.h"
#include "guided/schema_compiler.h"
#include "guided/vocabulary.h"

namespace ringlm::guided {

struct BenchStats {
  int64_t files = 0, compiled = 0, passed = 0;
  int64_t valid_total = 0, valid_accepted = 0, invalid_total = 0, invalid_rejected = 0;
  int64_t mask_mismatches = 0;       // a token's mask bit disagreed with accept(): a bug
  std::vector<double> mask_us, compile_ms;
  void merge(const BenchStats& o);
};

struct BenchFailure {
  std::string file, description, reason;
  bool valid;  // a valid instance rejected (soundness) vs an invalid one accepted (strictness)
};

struct BenchReport {
  BenchStats overall;
  std::map<std::string, BenchStats> per_dataset;
  std::map<std::string, int64_t> compile_errors;  // error message prefix -> files
  std::vector<std::pair<std::string, std::string>> refusals;  // file -> its whole compile error
  std::vector<BenchFailure> failures;
};

struct BenchOptions {
  Whitespace whitespace = Whitespace::kCompact;
  SchemaMode mode = SchemaMode::kStrict;
  int threads = 1;
  // Mask every Nth position (1 = all); mask/accept agreement is checked where masked.
  int mask_every = 1;
};

using EncodeFn = std::function<std::vector<uint32_t>(const std::string&)>;

// Dataset name of a bench file: the part of the file name before "---", else the stem without
// a trailing "_<digits>".
std::string bench_dataset_name(const std::string& path);

// Expands directories into their *.json files (sorted); files are kept as given.
std::vector<std::string> bench_collect_files(const std::vector<std::string>& paths);

BenchReport run_grammar_bench(const std::vector<std::string>& files, std::shared_ptr<const Vocabulary> vocab,
                              const EncodeFn& encode, const BenchOptions& options);

// Percentile (0..100) of a sample (nearest rank); 0 for an empty sample.
double percentile(std::vector<double> v, double p);

std::string format_bench_table(const BenchReport& r);
Json bench_report_json(const BenchReport& r);

}  // namespace ringlm::guided
