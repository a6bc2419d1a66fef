// `ringlm extract`: the guided-extraction batch job. Each JSONL input row becomes one
// generation constrained by a JSON Schema; results are appended to the output as they
// finish (or in input order with --ordered), and a re-run resumes where the last one
// stopped, if it runs with the same settings (the records' fingerprint). A failed write
// stops the run with an error naming the file and what is safely in it.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "cli/command.h"
#include "cli/extract_fingerprint.h"
#include "cli/extract_options.h"
#include "cli/extract_prompts.h"
#include "cli/extract_writer.h"
#include "engine/batch_job.h"
#include "engine/batch_output.h"
#include "engine/batch_scheduler.h"
#include "engine/generator.h"
#include "guided/validator.h"
#include "io/bounded_read.h"
#include "util/error.h"

namespace {

using ringlm::cli::ExtractOptions;

// Exit status when any row's final record in the output failed (0: all ok; 1: an error).
constexpr int kExitRowsFailed = 3;

using Clock = std::chrono::steady_clock;

void draw_progress(std::size_t done, std::size_t total, std::size_t failed, double elapsed) {
  const int width = 30;
  const double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int filled = static_cast<int>(frac * width);
  const double rate = elapsed > 0 ? done / elapsed : 0.0;
  const double eta = rate > 0 ? (total - done) / rate : 0.0;
  std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu rows  %zu failed  %.2f rows/s  ETA %.0fs ", filled,
               "##############################", width - filled, "", done, total, failed, rate, eta);
  std::fflush(stderr);
}

// "K/N" -> {K, N} with 0 <= K < N; {0, 1} when empty.
std::pair<std::size_t, std::size_t> parse_shard(const std::string& text) {
  if (text.empty()) return {0, 1};
  const auto slash = text.find('/');
  std::size_t k = 0, n = 0;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t used = 0;
    k = std::stoul(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("K");
    n = std::stoul(text.substr(slash + 1), &used);
    if (used != text.size() - slash - 1) throw std::invalid_argument("N");
  } catch (const std::exception&) {
    ringlm::fail("--shard ", text, ": expected K/N (e.g. 0/4)");
  }
  if (n == 0 || k >= n) ringlm::fail("--shard ", text, ": K must be in [0, N) and N at least 1");
  return {k, n};
}

using OrderedJson = nlohmann::ordered_json;

constexpr std::size_t kMaxSchemaBytes = std::size_t{16} << 20;

// The schema file's text and its parsed form.
std::pair<std::string, ringlm::guided::Json> read_schema(const std::string& path) {
  // Bounded: --schema /dev/zero is refused, not read until the allocator gives up.
  std::string text = ringlm::io::read_bounded_file(path, kMaxSchemaBytes, "--schema");
  try {
    return {text, ringlm::guided::Json::parse(text)};
  } catch (const std::exception& e) {
    ringlm::fail(path, ": not valid JSON: ", e.what());
  }
}

// The input rows of this shard: every N-th input line starting at K (lines 1-based, so
// line - 1), so shards partition the file whatever blank lines it has, with no gap and no overlap.
std::vector<ringlm::engine::InputRow> shard_rows(const ExtractOptions& o) {
  // Plain variables, not a structured binding: clang 14 cannot capture those in a lambda.
  const auto shard = parse_shard(o.shard);
  const auto shard_k = shard.first, shard_n = shard.second;
  auto rows = ringlm::engine::read_input_rows(o.input, o.id_field);
  if (shard_n > 1) {
    std::erase_if(rows, [&](const ringlm::engine::InputRow& r) { return (r.line - 1) % shard_n != shard_k; });
  }
  return rows;
}

// Rows still to do: those without a record, and with --retry-failed those whose last record
// failed. `state` is the output's final verdict per id.
struct RowPlan {
  std::map<std::string, ringlm::engine::RecordState> state;
  std::vector<const ringlm::engine::InputRow*> todo;
};

RowPlan plan_rows(const ExtractOptions& o, const std::vector<ringlm::engine::InputRow>& rows) {
  RowPlan p;
  p.state = ringlm::engine::read_output_state(o.output);
  for (const auto& r : rows) {
    auto it = p.state.find(r.id);
    if (it == p.state.end() || (o.retry_failed && !it->second.ok)) p.todo.push_back(&r);
  }
  if (o.limit > 0 && p.todo.size() > static_cast<std::size_t>(o.limit)) p.todo.resize(static_cast<std::size_t>(o.limit));
  return p;
}

std::size_t failed_in_output(const std::vector<ringlm::engine::InputRow>& rows, const RowPlan& p) {
  std::size_t n = 0;
  for (const auto& r : rows)
    if (auto it = p.state.find(r.id); it != p.state.end() && !it->second.ok) ++n;
  return n;
}

// With --retry-failed, the failed records of the rows about to run again go, so every id ends
// with one final record; the lock moves to the new file. Returns how many were dropped.
std::size_t drop_failed_records(const ExtractOptions& o, const std::vector<ringlm::engine::InputRow>& rows,
                                std::unique_ptr<ringlm::engine::JsonlAppender>& out) {
  if (!o.retry_failed) return 0;
  const RowPlan p = plan_rows(o, rows);
  std::set<std::string> redo;
  for (const auto* r : p.todo)
    if (auto it = p.state.find(r->id); it != p.state.end() && !it->second.ok) redo.insert(r->id);
  const std::size_t retried = ringlm::engine::drop_records(o.output, redo);
  if (retried) {
    auto fresh = std::make_unique<ringlm::engine::JsonlAppender>(o.output);
    out = std::move(fresh);
  }
  return retried;
}

// A row's record from its generation (or error): ok with the validated output, or the error.
OrderedJson row_record(const ringlm::engine::InputRow& row, const ringlm::engine::SequenceOutcome* outcome,
                       const std::string& error, int image_tokens, int audio_tokens,
                       const ringlm::guided::Validator& validator, const std::string& fingerprint) {
  using namespace ringlm;
  OrderedJson rec = {{"id", row.id}, {"line", row.line}, {"fingerprint", fingerprint}};
  if (image_tokens > 0) rec["image_tokens"] = image_tokens;
  if (audio_tokens > 0) rec["audio_tokens"] = audio_tokens;
  try {
    if (!error.empty()) fail(error);
    if (!outcome->error.empty()) fail(outcome->error);
    const auto& result = outcome->result;
    rec["finish"] = engine::finish_reason_name(result.finish);
    rec["prompt_tokens"] = result.prompt_tokens;
    rec["cached_prompt_tokens"] = result.cached_prompt_tokens;
    rec["completion_tokens"] = result.completion_tokens;
    OrderedJson value;
    try {
      value = OrderedJson::parse(result.text);
    } catch (const std::exception&) {
      fail("the reply is not complete JSON (finish: ", engine::finish_reason_name(result.finish),
           "; raise --max-tokens?): ", result.text.substr(0, 200));
    }
    std::string why;
    if (!validator.validate(value, &why)) fail("the reply does not validate against the schema: ", why);
    rec["ok"] = true;
    rec["output"] = value;
  } catch (const Error& e) {
    rec["ok"] = false;
    rec["error"] = e.what();
  }
  return rec;
}

// Stops a resume over records made with other settings (issue #30): their rows would be
// skipped as done although this run would answer them differently. Only the records this run
// keeps count (not the failed ones --retry-failed is about to replace). Records from before
// fingerprints existed have none and count as made with other settings. --force-resume
// keeps them all and runs only the rows not yet in the output.
void check_fingerprints(const ExtractOptions& o, const RowPlan& p, const std::string& fingerprint) {
  if (o.force_resume) return;
  std::set<std::string> redo;  // failed records that --retry-failed replaces: not kept, so never stale
  for (const auto* r : p.todo) redo.insert(r->id);
  std::size_t other = 0, none = 0;
  std::string seen;
  for (const auto& [id, st] : p.state) {
    if (st.fingerprint == fingerprint || redo.count(id)) continue;
    if (st.fingerprint.empty()) ++none;
    else if (++other == 1) seen = st.fingerprint;
  }
  if (!other && !none) return;
  std::string why;
  if (other)
    why = std::to_string(other) + " record(s) were made with other settings (" +
          ringlm::cli::fingerprint_difference(seen, fingerprint) + " changed: fingerprint " + seen + ", this run " +
          fingerprint + ")";
  if (none)
    why += (why.empty() ? "" : "; ") + std::to_string(none) +
           " record(s) have no settings fingerprint (written before records carried one: settings unknown)";
  ringlm::fail(o.output, ": ", why, ". Resuming would keep rows this run would answer differently: write to a new "
               "--output, or pass --force-resume to keep those records and run only the rows not in the output yet");
}

// SIGINT/SIGTERM while rows run: a flag the loop looks at between steps, so the run stops
// after the step in flight with every finished record on disk, and prints its summary. A
// second signal ends the process at once (the records written so far are on disk already).
volatile std::sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int sig) {
  if (g_stop_signal) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop_signal = sig;
}

// A signal ignored when the run starts (a background job of a script, nohup) stays ignored.
class StopSignals {
 public:
  StopSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    g_stop_signal = 0;
    for (auto [sig, old] : {std::pair{SIGINT, &old_int_}, std::pair{SIGTERM, &old_term_}}) {
      sigaction(sig, nullptr, old);
      if (old->sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);
    }
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  static int caught() { return g_stop_signal; }

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

// Says what a run that did not finish left behind, and ends it: exit 128 + the signal's
// number after SIGINT/SIGTERM, or an error naming the output after a failed write.
[[noreturn]] void stop_run(const ExtractOptions& o, const std::string& write_failure, std::size_t on_disk) {
  const std::string where = o.output == "-" ? "written to standard output" : "safely in " + o.output;
  if (!write_failure.empty())
    ringlm::fail(write_failure, "; the run stopped there: ", on_disk, " row(s) are ", where,
                 o.output == "-" ? "" : " (a rerun resumes with the rest)");
  const int sig = StopSignals::caught();
  std::fprintf(stderr, "ringlm extract: stopped by %s: %zu row(s) are %s%s\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
               on_disk, where.c_str(), o.output == "-" ? "" : " (a rerun resumes with the rest)");
  throw ringlm::cli::ExitStatus{128 + sig};
}

void extract(const ExtractOptions& o) {
  using namespace ringlm;
  if (o.parallel < 1) fail("--parallel must be at least 1, got ", o.parallel);
  if (o.output == "-" && o.retry_failed) fail("--retry-failed rewrites the output file: it cannot be standard output");
  // Before reading anything: a FIFO or /dev/stdout as the output would block the read, and
  // the input as the output would be eaten by its own records.
  engine::check_output_path(o.output, {o.input, o.schema_file});
  const auto [schema_text, schema] = read_schema(o.schema_file);
  guided::Validator validator(schema);

  const auto rows = shard_rows(o);
  const engine::EngineOptions engine_options = o.model.engine_options();
  const std::string fingerprint = cli::extract_fingerprint(o, schema_text, engine_options.model_dir.string());
  RowPlan plan = plan_rows(o, rows);  // read-only: nothing is created until the model and the schema have loaded
  check_fingerprints(o, plan, fingerprint);
  if (plan.todo.empty()) {
    const std::size_t failed = failed_in_output(rows, plan);
    std::fprintf(stderr, "ringlm extract: %zu rows in %s, all in %s, 0 to do", rows.size(), o.input.c_str(),
                 o.output.c_str());
    if (failed) std::fprintf(stderr, " (%zu failed; --retry-failed runs them again)", failed);
    std::fputc('\n', stderr);
    if (failed) throw cli::ExitStatus{kExitRowsFailed};
    return;
  }

  engine::Engine engine(engine_options);
  // A schema that does not compile fails here, before any row; in lenient mode say what only the
  // validator (run on every reply below) checks.
  for (const auto& u : engine.grammar_for_schema(schema_text)->unenforced())
    std::fprintf(stderr, "ringlm extract: schema-mode lenient: not enforced while generating, checked after: %s\n", u.c_str());

  auto out = std::make_unique<engine::JsonlAppender>(o.output);  // locks it: never recover a file in use
  if (o.output != "-") engine::recover_output(o.output);
  const std::size_t retried = drop_failed_records(o, rows, out);
  plan = plan_rows(o, rows);
  std::fprintf(stderr, "ringlm extract: %zu rows in %s%s, %zu already in %s, %zu to do", rows.size(), o.input.c_str(),
               parse_shard(o.shard).second > 1 ? (" (shard " + o.shard + ")").c_str() : "", plan.state.size(),
               o.output.c_str(), plan.todo.size());
  if (retried) std::fprintf(stderr, " (%zu of them failed before)", retried);
  std::fputc('\n', stderr);
  // Rows run --parallel at a time through one batched forward pass per step. Each row
  // starts from exactly the pinned prefix (never from what its slot ran before), so a row's
  // greedy output does not depend on --parallel or on the order rows finish in.
  engine::BatchSchedulerOptions so;
  so.max_sequences = std::min<int>(o.parallel, static_cast<int>(std::max<std::size_t>(plan.todo.size(), 1)));
  so.reuse_slot_cache = false;
  const engine::DraftParams draft = o.draft.params();
  if (draft.source != engine::DraftSource::none) so.draft_max = draft.max_tokens;
  engine::BatchScheduler sched(engine, so);
  cli::RowPrompts prompts(engine, o, schema);
  // The prompt prefix every row shares (instructions + schema) is prefilled once and pinned.
  {
    auto a = prompts.render("A"), b = prompts.render("B");
    std::size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    sched.pin_prefix(std::span<const std::int32_t>(a.data(), n));
  }

  auto params = o.sampling.params();
  params.json_schema = schema_text;
  params.draft = draft;  // the output is the same with or without drafts (not in the fingerprint)
  const bool show = o.progress || (!o.no_progress && isatty(fileno(stderr)));
  const auto t0 = Clock::now();
  std::size_t finished = 0, failed = 0;  // records on disk this run
  // --ordered holds back the records of rows that finish ahead of an earlier one; rows start
  // only within 4 x --parallel of the first unwritten one, which bounds what waits.
  const std::size_t window = o.ordered ? 4 * static_cast<std::size_t>(so.max_sequences) : 0;
  cli::RecordWriter writer(std::move(out), window, [&](const OrderedJson& rec) {
    const bool ok = rec["ok"].get<bool>();
    plan.state[rec["id"].get<std::string>()] = {ok, fingerprint};
    ++finished;
    if (!ok) ++failed;
    if (show) draw_progress(finished, plan.todo.size(), failed, std::chrono::duration<double>(Clock::now() - t0).count());
  });
  // Builds a row's record from its generation (or error) and hands it to the writer.
  auto record = [&](std::size_t pos, const engine::InputRow& row, Clock::time_point r0,
                    const engine::SequenceOutcome* outcome, const std::string& error, int image_tokens,
                    int audio_tokens) {
    OrderedJson rec = row_record(row, outcome, error, image_tokens, audio_tokens, validator, fingerprint);
    rec["seconds"] = std::chrono::duration<double>(Clock::now() - r0).count();
    writer.put(pos, std::move(rec));
  };
  StopSignals signals;
  const auto stopped = [&] { return !writer.failure().empty() || StopSignals::caught() != 0; };
  std::size_t next = 0;
  while (!stopped()) {
    // Fill the free slots (between steps: on_done never admits).
    while (next < plan.todo.size() && sched.has_room() && writer.may_admit(next) && !stopped()) {
      const std::size_t pos = next++;
      const engine::InputRow& row = *plan.todo[pos];
      const auto r0 = Clock::now();
      try {
        if (!row.error.empty()) fail(row.error);
        int image_tokens = 0, audio_tokens = 0;
        engine::SequenceRequest req = prompts.request(row, params, &image_tokens, &audio_tokens);
        req.on_done = [&record, &row, pos, r0, image_tokens, audio_tokens](engine::SequenceOutcome&& outcome) {
          record(pos, row, r0, &outcome, {}, image_tokens, audio_tokens);
        };
        sched.admit(std::move(req));
      } catch (const Error& e) {
        record(pos, row, r0, nullptr, e.what(), 0, 0);
      }
    }
    if (stopped()) break;
    if (sched.step() == 0 && next >= plan.todo.size()) break;
  }
  const double total = std::chrono::duration<double>(Clock::now() - t0).count();
  if (show) std::fputc('\n', stderr);
  std::fprintf(stderr, "ringlm extract: %zu rows done (%zu failed) in %.2f s, %.2f rows/s\n", finished, failed, total,
               total > 0 ? finished / total : 0.0);
  if (stopped()) stop_run(o, writer.failure(), o.output == "-" ? finished : plan.state.size());
  if (const std::size_t still = failed_in_output(rows, plan)) {
    std::fprintf(stderr, "ringlm extract: %zu rows failed (their records say why); --retry-failed runs them again\n",
                 still);
    throw cli::ExitStatus{kExitRowsFailed};
  }
}

}  // namespace

RINGLM_COMMAND(extract) {
  auto opts = std::make_shared<ExtractOptions>();
  auto* sub = app.add_subcommand("extract", "Guided JSON extraction over a JSONL file (resumable batch job)");
  sub->footer("Example:\n  ringlm extract --schema examples/ticket.schema.json --input examples/tickets.jsonl --output out.jsonl");
  opts->model.add_to(sub);
  opts->sampling.add_to(sub);
  sub->add_option("--schema", opts->schema_file, "JSON Schema file every reply must follow")->required();
  sub->add_option("--input", opts->input, "Input rows, one JSON object per line (- reads standard input)")->required();
  sub->add_option("--output", opts->output,
                  "Output JSONL (appended; a re-run resumes; - writes standard output, line by line)")
      ->required();
  sub->add_option("--template", opts->prompt_template, "User message template; {field} takes the row's field");
  sub->add_option("--image-tokens", opts->image_tokens,
                  "Soft tokens per image of rows with an image/images field: 70, 140, 280, 560 or 1120 "
                  "(default: the processor config's)");
  sub->add_option("--instructions", opts->instructions,
                  "System instructions (the schema is appended unless --no-schema-in-prompt)");
  sub->add_flag("--schema-in-prompt,!--no-schema-in-prompt", opts->schema_in_prompt,
                "Describe the schema to the model after the instructions (on by default)");
  sub->add_option("--id-field", opts->id_field, "Row field that identifies it (default: id; else the line number)");
  sub->add_option("--limit", opts->limit, "Process at most N rows this run");
  sub->add_flag("--trust-control-tokens", opts->trust_control_tokens,
                "Parse control tokens written in row fields (e.g. <turn|>) as control tokens");
  sub->add_flag("--progress", opts->progress, "Always draw the progress bar");
  sub->add_flag("--no-progress", opts->no_progress, "Never draw the progress bar");
  sub->add_option("--parallel", opts->parallel,
                  "Rows in flight at once, advanced together in one batched forward pass per step")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  opts->draft.add_to(sub);
  sub->add_option("--shard", opts->shard,
                  "K/N: only input lines K+1, K+1+N, ... (every N-th line from line K+1), for N machines or pods");
  sub->add_flag("--retry-failed", opts->retry_failed,
                "Run again the rows whose last record failed (the output keeps one final record per id)");
  sub->add_flag("--force-resume", opts->force_resume,
                "Resume over records made with other settings (schema, template, model, sampling) or none recorded");
  sub->add_flag("--ordered", opts->ordered,
                "Write records in input order (rows finishing early wait, at most 4 x --parallel of them)");
  sub->add_option("--allow-local-media", opts->allow_local_media,
                  "Rows' image/audio paths may lie anywhere under DIR (default: only under the input file's folder)");
  sub->callback([opts] { extract(*opts); });
}
