// `ringlm bench-grammar`: JSONSchemaBench-style evaluation of guided generation (schema
// compile, token-by-token walk of each test instance through the matcher, mask timings).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/hf_model.h"
#include "guided/grammar_bench.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

RINGLM_COMMAND(bench_grammar) {
  struct Args {
    std::string model, hf, json_out, failures_out, whitespace = "compact", schema_mode = "strict";
    std::vector<std::string> inputs;
    int threads = 1, mask_every = 1;
  };
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand("bench-grammar", "Benchmark guided generation on JSONSchemaBench-format files");
  sub->footer("Example:\n  ringlm bench-grammar --model build/demo-model /path/to/JSONSchemaBench/Github_easy");
  ringlm::cli::add_hf_option(sub, args->hf,
                             sub->add_option("--model,-m", args->model, "Tokenizer or model directory (tokenizer.json)"));
  sub->add_option("--json", args->json_out, "Write the summary (and failures) as JSON to this file");
  sub->add_option("--schema-mode", args->schema_mode, "strict (refuse what the grammar cannot enforce) or lenient")
      ->check(CLI::IsMember({"strict", "lenient"}));
  sub->add_option("--whitespace", args->whitespace, "Grammar whitespace style: compact or python")
      ->check(CLI::IsMember({"compact", "python"}));
  sub->add_option("--threads,-t", args->threads, "Files processed in parallel (timings are per thread)")
      ->check(CLI::Range(1, 256));
  sub->add_option("--mask-every", args->mask_every, "Compute the mask at every Nth token (1 = all)")
      ->check(CLI::Range(1, 1000000));
  sub->add_option("inputs", args->inputs, "Bench files or directories of them")->required();
  sub->callback([args] {
    if (!args->hf.empty()) args->model = ringlm::cli::resolve_hf_model(args->hf).model.string();
    std::string model = args->model.empty() ? ringlm::cli::default_model_dir() : args->model;
    if (model.empty()) ringlm::fail("--model is required (no demo model is installed)");
    ringlm::Tokenizer tok = ringlm::Tokenizer::load(model);
    auto vocab = ringlm::guided::vocabulary_from_tokenizer(tok);
    if (vocab->stop_ids().empty()) ringlm::fail(model, ": the tokenizer defines no eos token");
    ringlm::EncodeOptions eo;
    eo.add_bos = false;
    eo.parse_special = false;  // instance text is data, never control tokens
    ringlm::guided::EncodeFn encode = [&tok, eo](const std::string& text) {
      std::vector<uint32_t> out;
      for (int32_t id : tok.encode(text, eo)) out.push_back(uint32_t(id));
      return out;
    };
    ringlm::guided::BenchOptions opt;
    opt.mode = ringlm::guided::parse_schema_mode(args->schema_mode);
    opt.whitespace = args->whitespace == "python" ? ringlm::guided::Whitespace::kPython
                                                  : ringlm::guided::Whitespace::kCompact;
    opt.threads = args->threads;
    opt.mask_every = args->mask_every;
    auto files = ringlm::guided::bench_collect_files(args->inputs);
    if (files.empty()) ringlm::fail("no bench files found in the given inputs");
    auto report = ringlm::guided::run_grammar_bench(files, vocab, encode, opt);
    std::fputs(ringlm::guided::format_bench_table(report).c_str(), stdout);
    if (!report.compile_errors.empty()) {
      std::printf("\ncompile errors (files):\n");
      for (auto& [what, n] : report.compile_errors) std::printf("  %5lld  %s\n", (long long)n, what.c_str());
    }
    size_t unsound = 0;
    for (auto& f : report.failures) unsound += f.valid;
    std::printf("\nvalid instances rejected: %zu, invalid accepted: %zu, mask/accept mismatches: %lld\n", unsound,
                report.failures.size() - unsound, (long long)report.overall.mask_mismatches);
    if (!args->json_out.empty()) {
      std::ofstream out(args->json_out);
      if (!out) ringlm::fail(args->json_out, ": cannot write");
      out << ringlm::guided::bench_report_json(report).dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    }
  });
}
