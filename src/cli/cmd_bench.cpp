// `ringlm bench`: the model card's harness on any model directory — guided extraction over
// ten samples, long-context runs, needle-in-a-haystack recall and raw speed figures —
// printed as a table and optionally written as JSON.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench_batch.h"
#include "cli/bench_draft.h"
#include "cli/command.h"
#include "cli/common_options.h"
#include "engine/bench_data.h"
#include "engine/generator.h"
#include "kernels/mem_read.h"
#include "kernels/ref_parallel.h"
#include "model/decode_traffic.h"
#include "util/error.h"
#include "util/process_stats.h"

namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
namespace bd = ringlm::engine::bench_data;

struct BenchOptions {
  ringlm::cli::ModelFlags model;
  std::string json_out;
  std::vector<std::string> sections = {"speed", "guided", "long", "needle"};
  std::vector<int> long_contexts = {3400, 8000};
  std::vector<int> needle_contexts = {8000, 16000};
  int prefill_tokens = 512;
  int decode_tokens = 128;
  int growth_tokens = 2000;
  int guided_max_tokens = 128;
  ringlm::cli::BenchBatchOptions batch;
  ringlm::cli::BenchDraftOptions draft;
};

double mb(std::int64_t bytes) { return static_cast<double>(bytes) / 1e6; }

double decode_rate(const ringlm::engine::GenerationResult& r) {
  const double t = r.total_s - r.ttft_s;
  return r.completion_tokens > 1 && t > 0 ? (r.completion_tokens - 1) / t : 0.0;
}

// A user prompt of about `target` tokens of filler, optionally with needles planted at the
// given fractions, ending with `question`.
std::vector<std::int32_t> filler_prompt(ringlm::engine::Engine& engine, int target, const std::string& question,
                                        const std::vector<double>& needle_at) {
  const auto& tok = engine.tokenizer();
  const int per_paragraph = static_cast<int>(tok.encode(bd::filler_paragraph(0)).size());
  const int paragraphs = std::max(1, (target - 64) / std::max(1, per_paragraph));
  std::string body;
  std::size_t next_needle = 0;
  for (int i = 0; i < paragraphs; ++i) {
    while (next_needle < needle_at.size() && i >= static_cast<int>(needle_at[next_needle] * paragraphs)) {
      body += bd::needles()[next_needle].fact;
      body += "\n";
      ++next_needle;
    }
    body += bd::filler_paragraph(i);
  }
  ringlm::chat::ChatRequest req;
  req.messages.push_back({{"role", "user"}, {"content", body + "\n" + question}});
  req.add_generation_prompt = true;
  return engine.encode_chat(req);
}

// Measures read bandwidth in a forked child so its 512 MB buffer never shows in this
// process's peak RSS. Returns 0 where fork is unavailable or the child fails.
double read_bandwidth_in_child(int threads) {
  int fds[2];
  if (pipe(fds) != 0) return 0.0;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return 0.0;
  }
  if (pid == 0) {
    close(fds[0]);
    const double gbs = ringlm::kernels::measure_read_bandwidth_gbs(std::size_t{512} << 20, threads);
    const ssize_t w = write(fds[1], &gbs, sizeof gbs);
    _exit(w == static_cast<ssize_t>(sizeof gbs) ? 0 : 1);
  }
  close(fds[1]);
  double gbs = 0.0;
  if (read(fds[0], &gbs, sizeof gbs) != static_cast<ssize_t>(sizeof gbs)) gbs = 0.0;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return gbs;
}

Json bench_speed(ringlm::engine::Engine& engine, const BenchOptions& o) {
  using namespace ringlm;
  Json out;
  engine::Generator gen(engine, {.context_tokens = std::max(o.prefill_tokens + o.growth_tokens + 64, 4096)});
  std::vector<std::int32_t> prompt;
  for (int i = 0; static_cast<int>(prompt.size()) < o.prefill_tokens; ++i) {
    auto ids = engine.tokenizer().encode(bd::filler_paragraph(i));
    prompt.insert(prompt.end(), ids.begin(), ids.end());
  }
  prompt.resize(static_cast<std::size_t>(o.prefill_tokens));
  engine::GenerationParams p;
  p.max_tokens = o.decode_tokens;
  p.ignore_stop_ids = true;
  auto r = gen.generate(prompt, p, nullptr);
  out["prompt_tokens"] = r.prompt_tokens;
  out["prefill_tok_s"] = r.ttft_s > 0 ? r.prompt_tokens / r.ttft_s : 0.0;
  out["ttft_s"] = r.ttft_s;
  out["decode_tokens"] = r.completion_tokens;
  out["decode_tok_s"] = decode_rate(r);
  // The decode floor: bytes one step reads (at the mid-generation context) over the read
  // bandwidth of this machine with as many threads as the model uses.
  const auto& model = *engine.model();
  const auto traffic = model::decode_traffic(model.config(), model.weights(), r.prompt_tokens + r.completion_tokens / 2,
                                             kv::kv_type_bytes(engine.options().kv_type));
  const int threads = o.model.thread_count() > 0 ? o.model.thread_count() : kernels::default_thread_count();
  const double gbs = read_bandwidth_in_child(threads);
  const double floor_s = gbs > 0 ? static_cast<double>(traffic.total()) / (gbs * 1e9) : 0.0;
  const double decode_s = out["decode_tok_s"].get<double>() > 0 ? 1.0 / out["decode_tok_s"].get<double>() : 0.0;
  out["bytes_per_token"] = traffic.total();
  out["weight_bytes_per_token"] = traffic.weight_bytes;
  out["kv_type"] = kv::kv_type_name(engine.options().kv_type);
  out["kv_bytes_per_sequence"] = gen.session().kv_bytes();  // allocated K+V at this context capacity
  out["read_bandwidth_gbs"] = gbs;
  out["floor_tok_s"] = floor_s > 0 ? 1.0 / floor_s : 0.0;
  out["floor_fraction"] = decode_s > 0 ? floor_s / decode_s : 0.0;
  // Memory growth per generated token over a long generation (after a warm-up token).
  gen.reset();
  p.max_tokens = o.growth_tokens;
  std::int64_t rss_first = 0, rss_last = 0;
  int n = 0;
  auto g = gen.generate(std::span<const std::int32_t>(prompt.data(), 16), p, [&](const engine::TokenEvent&) {
    if (++n == 1) rss_first = anon_rss_bytes();
    rss_last = anon_rss_bytes();
    return true;
  });
  out["growth_tokens"] = g.completion_tokens;
  out["anon_rss_growth_bytes_per_token"] =
      g.completion_tokens > 1 ? static_cast<double>(rss_last - rss_first) / (g.completion_tokens - 1) : 0.0;
  out["peak_rss_mb"] = mb(peak_rss_bytes());
  return out;
}

Json bench_guided(ringlm::engine::Engine& engine, const BenchOptions& o) {
  using namespace ringlm;
  Json out, rows = Json::array();
  engine::Generator gen(engine);
  engine.grammar_for_schema(bd::kExtractionSchema);
  const Json schema = Json::parse(bd::kExtractionSchema);
  const auto& cat_enum = schema["properties"]["category"]["enum"];
  const auto& sent_enum = schema["properties"]["sentiment"]["enum"];
  int parsed = 0, enum_clean = 0;
  std::vector<double> long_s, short_s, tok_s, ttft;
  const auto& samples = bd::extraction_samples();
  for (std::size_t i = 0; i < samples.size(); ++i) {
    chat::ChatRequest req;
    req.messages.push_back({{"role", "system"},
                            {"content", std::string("Extract the review's fields as JSON following this schema:\n") +
                                            bd::kExtractionSchema}});
    req.messages.push_back({{"role", "user"}, {"content", samples[i].text}});
    req.add_generation_prompt = true;
    auto ids = engine.encode_chat(req);
    engine::GenerationParams p;
    p.max_tokens = o.guided_max_tokens;
    p.json_schema = bd::kExtractionSchema;
    gen.reset();  // as the model card's harness: reset() between samples
    auto r = gen.generate(ids, p, nullptr);
    bool ok = false, clean = false;
    try {
      Json v = Json::parse(r.text);
      ok = v.is_object();
      clean = ok && v.contains("category") && v.contains("sentiment") &&
              std::find(cat_enum.begin(), cat_enum.end(), v["category"]) != cat_enum.end() &&
              std::find(sent_enum.begin(), sent_enum.end(), v["sentiment"]) != sent_enum.end();
    } catch (const std::exception&) {
    }
    parsed += ok;
    enum_clean += clean;
    if (i > 0) {
      (samples[i].is_long ? long_s : short_s).push_back(r.total_s);
      tok_s.push_back(decode_rate(r));
      ttft.push_back(r.ttft_s);
    }
    rows.push_back({{"sample", i + 1}, {"long", samples[i].is_long}, {"prompt_tokens", r.prompt_tokens},
                    {"completion_tokens", r.completion_tokens}, {"seconds", r.total_s}, {"ttft_s", r.ttft_s},
                    {"parsed", ok}, {"enum_clean", clean}});
  }
  auto mean = [](const std::vector<double>& v) { return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size(); };
  auto [tmin, tmax] = tok_s.empty() ? std::pair{0.0, 0.0} : std::pair{*std::min_element(tok_s.begin(), tok_s.end()), *std::max_element(tok_s.begin(), tok_s.end())};
  auto [fmin, fmax] = ttft.empty() ? std::pair{0.0, 0.0} : std::pair{*std::min_element(ttft.begin(), ttft.end()), *std::max_element(ttft.begin(), ttft.end())};
  out["samples"] = samples.size();
  out["parsed"] = parsed;
  out["enum_clean"] = enum_clean;
  out["s_per_row_long"] = mean(long_s);
  out["s_per_row_short"] = mean(short_s);
  out["sample1_s"] = rows[0]["seconds"];
  out["decode_tok_s_min"] = tmin;
  out["decode_tok_s_max"] = tmax;
  out["ttft_s_min"] = fmin;
  out["ttft_s_max"] = fmax;
  out["peak_rss_mb"] = mb(peak_rss_bytes());
  out["rows"] = rows;
  return out;
}

Json bench_long(ringlm::engine::Engine& engine, const BenchOptions& o) {
  using namespace ringlm;
  Json out = Json::array();
  for (int target : o.long_contexts) {
    engine::Generator gen(engine, {.context_tokens = target + o.decode_tokens + 256});
    auto prompt = filler_prompt(engine, target, "Summarise the text above in a few sentences.", {});
    engine::GenerationParams p;
    p.max_tokens = o.decode_tokens;
    p.ignore_stop_ids = true;
    std::int64_t rss_first = 0, rss_last = 0;
    int n = 0;
    auto r = gen.generate(prompt, p, [&](const engine::TokenEvent&) {
      if (++n == 1) rss_first = current_rss_bytes();
      rss_last = current_rss_bytes();
      return true;
    });
    out.push_back({{"target_tokens", target}, {"prompt_tokens", r.prompt_tokens}, {"ttft_s", r.ttft_s},
                   {"decode_tok_s", decode_rate(r)}, {"generated", r.completion_tokens},
                   {"rss_first_token_mb", mb(rss_first)}, {"rss_last_token_mb", mb(rss_last)},
                   {"peak_rss_mb", mb(peak_rss_bytes())}});
  }
  return out;
}

Json bench_needle(ringlm::engine::Engine& engine, const BenchOptions& o) {
  using namespace ringlm;
  Json out = Json::array();
  std::string question = "Answer these three questions with the exact words from the text: ";
  for (const auto& n : bd::needles()) question += std::string(n.question) + " ";
  for (int target : o.needle_contexts) {
    engine::Generator gen(engine, {.context_tokens = target + 512});
    auto prompt = filler_prompt(engine, target, question, {0.1, 0.5, 0.9});
    engine::GenerationParams p;
    p.max_tokens = 64;
    auto r = gen.generate(prompt, p, nullptr);
    int found = 0;
    for (const auto& n : bd::needles()) found += r.text.find(n.answer) != std::string::npos;
    out.push_back({{"target_tokens", target}, {"prompt_tokens", r.prompt_tokens}, {"recalled", found},
                   {"of", bd::needles().size()}, {"ttft_s", r.ttft_s}, {"reply", r.text.substr(0, 200)}});
  }
  return out;
}

void bench(const BenchOptions& o) {
  using namespace ringlm;
  auto eo = o.model.engine_options();
  engine::Engine engine(eo);
  Json report;
  report["model"] = eo.model_dir.string();
  report["load_s"] = engine.load_seconds();
  report["rss_after_load_mb"] = mb(current_rss_bytes());
  std::printf("ringlm bench  model %s\n  load %.3f s, RSS after load %.1f MB\n", eo.model_dir.c_str(),
              engine.load_seconds(), mb(current_rss_bytes()));
  auto want = [&](const char* s) { return std::find(o.sections.begin(), o.sections.end(), s) != o.sections.end(); };
  if (want("speed")) {
    auto s = bench_speed(engine, o);
    report["speed"] = s;
    std::printf("  speed   prefill %.1f tok/s (%d tokens), TTFT %.3f s, decode %.2f tok/s (%d tokens), "
                "anonymous RSS growth %.1f B/token over %d tokens, peak RSS %.1f MB\n"
                "          decode floor %.1f tok/s (%.1f MB/token at %.1f GB/s read): decode at %.0f%% of it\n",
                s["prefill_tok_s"].get<double>(), s["prompt_tokens"].get<int>(), s["ttft_s"].get<double>(),
                s["decode_tok_s"].get<double>(), s["decode_tokens"].get<int>(),
                s["anon_rss_growth_bytes_per_token"].get<double>(), s["growth_tokens"].get<int>(),
                s["peak_rss_mb"].get<double>(), s["floor_tok_s"].get<double>(),
                mb(s["bytes_per_token"].get<std::int64_t>()), s["read_bandwidth_gbs"].get<double>(),
                100.0 * s["floor_fraction"].get<double>());
  }
  if (want("guided")) {
    auto g = bench_guided(engine, o);
    report["guided"] = g;
    std::printf("  guided  parse %d/%d, enum-clean %d/%d, s/row long %.3f short %.3f (sample 1: %.3f s), "
                "decode %.1f-%.1f tok/s, TTFT %.3f-%.3f s, peak RSS %.1f MB\n",
                g["parsed"].get<int>(), g["samples"].get<int>(), g["enum_clean"].get<int>(), g["samples"].get<int>(),
                g["s_per_row_long"].get<double>(), g["s_per_row_short"].get<double>(), g["sample1_s"].get<double>(),
                g["decode_tok_s_min"].get<double>(), g["decode_tok_s_max"].get<double>(), g["ttft_s_min"].get<double>(),
                g["ttft_s_max"].get<double>(), g["peak_rss_mb"].get<double>());
  }
  if (want("long")) {
    auto l = bench_long(engine, o);
    report["long_context"] = l;
    for (const auto& r : l)
      std::printf("  long    %5d prompt tokens: TTFT %.2f s, decode %.2f tok/s, %d generated, RSS %.1f -> %.1f MB, "
                  "peak %.1f MB\n",
                  r["prompt_tokens"].get<int>(), r["ttft_s"].get<double>(), r["decode_tok_s"].get<double>(),
                  r["generated"].get<int>(), r["rss_first_token_mb"].get<double>(), r["rss_last_token_mb"].get<double>(),
                  r["peak_rss_mb"].get<double>());
  }
  if (want("needle")) {
    auto n = bench_needle(engine, o);
    report["needle"] = n;
    for (const auto& r : n)
      std::printf("  needle  %5d prompt tokens: recalled %d/%d, TTFT %.2f s\n", r["prompt_tokens"].get<int>(),
                  r["recalled"].get<int>(), r["of"].get<int>(), r["ttft_s"].get<double>());
  }
  if (want("batch")) report["batch"] = cli::bench_batch(engine, o.batch);
  if (want("draft")) report["draft"] = cli::bench_draft(engine, o.draft);
  report["peak_rss_mb"] = mb(peak_rss_bytes());
  std::printf("  peak RSS %.1f MB\n", mb(peak_rss_bytes()));
  if (!o.json_out.empty()) {
    // Replies of a random-weight model can end inside a UTF-8 sequence (the needle answers
    // did, at 16k on E2B): write such bytes as U+FFFD instead of throwing away the report.
    const std::string s = report.dump(2, ' ', false, Json::error_handler_t::replace);
    std::FILE* f = std::fopen(o.json_out.c_str(), "w");
    if (!f) fail(o.json_out, ": cannot open for writing");
    std::fwrite(s.data(), 1, s.size(), f);
    std::fclose(f);
  }
}

}  // namespace

RINGLM_COMMAND(bench) {
  auto opts = std::make_shared<BenchOptions>();
  auto* sub = app.add_subcommand("bench", "The model card's harness: guided extraction, long context, needles, speed");
  sub->footer("Example:\n  ringlm bench --model DIR --sections speed,guided --json bench.json");
  opts->model.add_to(sub);
  sub->add_option("--json", opts->json_out, "Also write the figures as JSON to this file");
  sub->add_option("--sections", opts->sections, "Which parts to run: speed guided long needle batch draft")->delimiter(',');
  sub->add_option("--batch-sizes", opts->batch.batch_sizes, "Sequences decoding together in the batch run")->delimiter(',');
  sub->add_option("--batch-prompt-tokens", opts->batch.prompt_tokens, "Prompt size per sequence of the batch run");
  sub->add_option("--batch-decode-tokens", opts->batch.decode_tokens, "Generated tokens per sequence of the batch run");
  sub->add_option("--batch-extract-parallel", opts->batch.extract_parallel, "--parallel values of the batch extract run")
      ->delimiter(',');
  sub->add_option("--batch-extract-rows", opts->batch.extract_rows, "Rows of the batch extract run");
  sub->add_option("--draft-k", opts->draft.k, "Drafted tokens per step of the draft run's acceptance rows (1..16)");
  sub->add_option("--draft-decode-tokens", opts->draft.decode_tokens, "Generated tokens per run of the draft section");
  sub->add_option("--draft-repeats", opts->draft.repeats, "Runs per figure of the draft section (the best is kept)");
  sub->add_option("--draft-verify-k", opts->draft.max_k, "Verify cost of the draft section for k = 1..N (1..16)");
  sub->add_option("--draft-rounds", opts->draft.rounds,
                  "Draft section: N rounds alternating none/auto/always per rate instead of the usual figures (0: off)");
  sub->add_option("--draft-rates", opts->draft.rates, "Oracle acceptance rates of --draft-rounds")->delimiter(',');
  sub->add_flag("--draft-warm", opts->draft.warm, "--draft-rounds on one warmed scheduler per policy (default: fresh per run)");
  sub->add_option("--draft-assistant", opts->draft.assistant,
                  "Gemma 4 assistant checkpoint: the draft section also runs --draft assistant:PATH");
  sub->add_option("--draft-extract-rows", opts->draft.extract_rows,
                  "Extraction rows of the draft section's prompt-lookup acceptance (0: skip)");
  sub->add_option("--long-contexts", opts->long_contexts, "Prompt sizes of the long-context run")->delimiter(',');
  sub->add_option("--needle-contexts", opts->needle_contexts, "Prompt sizes of the needle run")->delimiter(',');
  sub->add_option("--prefill-tokens", opts->prefill_tokens, "Prompt size of the speed run");
  sub->add_option("--decode-tokens", opts->decode_tokens, "Generated tokens in the speed and long runs");
  sub->add_option("--growth-tokens", opts->growth_tokens, "Generated tokens of the memory-growth run");
  sub->callback([opts] { bench(*opts); });
}
