#include <chrono>
#include <string>

#include "cli/bench_batch.h"
#include "engine/batch_scheduler.h"
#include "engine/bench_data.h"
#include "model/model.h"
#include "util/error.h"
#include "util/process_stats.h"

namespace ringlm::cli {

namespace {
using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
namespace bd = engine::bench_data;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// B different prompts of exactly `n` tokens (filler text, each starting elsewhere).
std::vector<std::int32_t> filler_tokens(const engine::Engine& engine, int n, int salt) {
  std::vector<std::int32_t> ids;
  for (int i = salt; static_cast<int>(ids.size()) < n; ++i) {
    auto p = engine.tokenizer().encode(bd::filler_paragraph(i));
    ids.insert(ids.end(), p.begin(), p.end());
  }
  ids.resize(static_cast<std::size_t>(n));
  return ids;
}

Json decode_at(engine::Engine& engine, const BenchBatchOptions& o, int b) {
  // Prompts are prefilled one 64-token chunk per step next to the rows already decoding, so
  // the first sequence decodes for up to `stagger` steps before the last one starts. Each
  // sequence may generate that many tokens more than decode_tokens, and only the steps in
  // which all b sequences decode are timed (decode_tokens of them); then the rest is
  // cancelled. (Timing from the last start to the end, as before, let the early sequences
  // finish inside the window: at B=16 with 128-token prompts the timed steps ran ~8
  // sequences on average.)
  const int chunks_per_prompt = (o.prompt_tokens + model::Session::kMaxChunk - 1) / model::Session::kMaxChunk;
  const int stagger = b * chunks_per_prompt + 2;
  const int max_tokens = o.decode_tokens + stagger;
  engine::BatchScheduler sched(engine, {.max_sequences = b,
                                        .context_tokens = o.prompt_tokens + max_tokens + 64,
                                        .reuse_slot_cache = false});
  std::vector<int> generated(static_cast<std::size_t>(b), 0);
  bool stop = false;
  for (int i = 0; i < b; ++i) {
    engine::SequenceRequest req;
    req.prompt = filler_tokens(engine, o.prompt_tokens, i * 7);
    req.params.max_tokens = max_tokens;
    req.params.ignore_stop_ids = true;
    req.on_token = [&generated, &stop, i](const engine::TokenEvent&) {
      ++generated[static_cast<std::size_t>(i)];
      return !stop;
    };
    req.on_done = [&stop](engine::SequenceOutcome&& out) {
      if (!out.error.empty() && !stop) fail("bench batch: ", out.error);
    };
    sched.admit(std::move(req));
  }
  // Prefill until every sequence has its first token; then time the steps where all decode.
  const auto t_start = Clock::now();
  auto all_started = [&] {
    for (int g : generated)
      if (g == 0) return false;
    return true;
  };
  while (!all_started() && sched.step() > 0) {
  }
  const double prefill_s = since(t_start);
  auto total = [&] {
    int n = 0;
    for (int g : generated) n += g;
    return n;
  };
  const int at_start = total();
  const auto t0 = Clock::now();
  int steps = 0;
  while (steps < o.decode_tokens && sched.active() == b) {
    const int before = total();
    if (sched.step() == 0) break;
    ++steps;
    if (total() - before != b) fail("bench batch: a decode step at B=", b, " produced ", total() - before, " tokens");
  }
  const double decode_s = since(t0);
  const int decoded = total() - at_start;
  stop = true;  // cancel the rest at the next step
  while (sched.step() > 0) {
  }
  const double agg = decode_s > 0 ? decoded / decode_s : 0.0;
  return {{"batch", b},
          {"prompt_tokens", o.prompt_tokens},
          {"prefill_s", prefill_s},
          {"decode_tokens", decoded},
          {"decode_steps", steps},
          {"decode_s", decode_s},
          {"aggregate_tok_s", agg},
          {"per_sequence_tok_s", agg / b},
          {"kv_bytes", sched.kv_bytes()},
          {"peak_rss_mb", static_cast<double>(peak_rss_bytes()) / 1e6}};
}

// extract's loop (cmd_extract.cpp) over `rows` guided rows at one --parallel: rows/s and
// the outputs in row order.
Json extract_at(engine::Engine& engine, const BenchBatchOptions& o, int parallel, std::vector<std::string>& texts) {
  engine::BatchScheduler sched(engine, {.max_sequences = parallel, .reuse_slot_cache = false});
  const std::string system = std::string("Extract the review's fields as JSON following this schema:\n") + bd::kExtractionSchema;
  auto render = [&](const std::string& user) {
    chat::ChatRequest req;
    req.messages.push_back({{"role", "system"}, {"content", system}});
    req.messages.push_back({{"role", "user"}, {"content", user}});
    req.add_generation_prompt = true;
    return engine.tokenizer().encode(engine.render_chat(req));
  };
  {
    auto a = render("A"), b = render("B");
    std::size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    sched.pin_prefix(std::span<const std::int32_t>(a.data(), n));
  }
  const auto& samples = bd::extraction_samples();
  texts.assign(static_cast<std::size_t>(o.extract_rows), std::string());
  int completion = 0;
  const auto t0 = Clock::now();
  int next = 0;
  for (;;) {
    while (next < o.extract_rows && sched.has_room()) {
      const int i = next++;
      engine::SequenceRequest req;
      const auto& s = samples[static_cast<std::size_t>(i) % samples.size()];
      req.prompt = render("Ticket " + std::to_string(i + 1) + ": " + s.text);
      req.params.max_tokens = o.extract_max_tokens;
      req.params.json_schema = bd::kExtractionSchema;
      req.on_done = [&texts, &completion, i](engine::SequenceOutcome&& out) {
        texts[static_cast<std::size_t>(i)] = out.error.empty() ? out.result.text : "error: " + out.error;
        completion += out.result.completion_tokens;
      };
      sched.admit(std::move(req));
    }
    if (sched.step() == 0 && next >= o.extract_rows) break;
  }
  const double s = since(t0);
  return {{"parallel", parallel},     {"rows", o.extract_rows},   {"seconds", s},
          {"rows_per_s", s > 0 ? o.extract_rows / s : 0.0},       {"completion_tokens", completion},
          {"mean_batch", sched.stats().steps ? static_cast<double>(sched.stats().sequence_steps) / sched.stats().steps : 0.0}};
}

}  // namespace

nlohmann::ordered_json bench_batch(engine::Engine& engine, const BenchBatchOptions& o) {
  Json out;
  Json decode = Json::array();
  for (int b : o.batch_sizes) {
    if (b < 1) fail("bench: batch size ", b, " must be at least 1");
    decode.push_back(decode_at(engine, o, b));
    const auto& r = decode.back();
    std::printf("  batch   B=%-2d decode %.2f tok/s aggregate, %.2f per sequence (%d tokens, %.2f s; prefill %.2f s), "
                "KV %.1f MB\n",
                b, r["aggregate_tok_s"].get<double>(), r["per_sequence_tok_s"].get<double>(),
                r["decode_tokens"].get<int>(), r["decode_s"].get<double>(), r["prefill_s"].get<double>(),
                static_cast<double>(r["kv_bytes"].get<std::size_t>()) / 1e6);
    std::fflush(stdout);
  }
  const double base = decode.empty() ? 0.0 : decode[0]["aggregate_tok_s"].get<double>();
  for (auto& r : decode) r["speedup_vs_first"] = base > 0 ? r["aggregate_tok_s"].get<double>() / base : 0.0;
  out["decode"] = decode;
  Json extract = Json::array();
  std::vector<std::string> first, texts;
  bool identical = true;
  for (int p : o.extract_parallel) {
    extract.push_back(extract_at(engine, o, p, texts));
    if (first.empty()) first = texts;
    else identical = identical && texts == first;
    const auto& r = extract.back();
    std::printf("  batch   extract --parallel %-2d %.3f rows/s (%d rows, %.2f s, mean batch %.1f)\n", p,
                r["rows_per_s"].get<double>(), r["rows"].get<int>(), r["seconds"].get<double>(),
                r["mean_batch"].get<double>());
    std::fflush(stdout);
  }
  out["extract"] = extract;
  out["extract_outputs_identical"] = identical;
  if (o.extract_parallel.size() > 1)
    std::printf("  batch   extract outputs identical across --parallel: %s\n", identical ? "yes" : "NO");
  return out;
}

}  // namespace ringlm::cli
