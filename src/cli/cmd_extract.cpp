// `ringlm extract`: the guided-extraction batch job. Each JSONL input row becomes one
// generation constrained by a JSON Schema; results are appended to the output as they
// finish, and a re-run resumes where the last one stopped.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <map>
#include <set>
#include <memory>

#include "cli/command.h"
#include "cli/common_options.h"
#include "engine/batch_job.h"
#include "engine/batch_scheduler.h"
#include "engine/batch_output.h"
#include "engine/generator.h"
#include "engine/media_prompt.h"
#include "guided/validator.h"
#include "util/error.h"

namespace {

struct ExtractOptions {
  ringlm::cli::ModelFlags model;
  ringlm::cli::SamplingFlags sampling;
  std::string schema_file, input, output;
  std::string prompt_template = "{text}";
  int image_tokens = 0;
  std::string instructions =
      "Extract the requested fields from the user's message. Reply with one JSON object that "
      "follows this JSON Schema:";
  std::string id_field = "id";
  int limit = 0;
  bool progress = false;
  bool trust_control_tokens = false;
  bool no_progress = false;
  bool retry_failed = false;
  bool schema_in_prompt = true;
  int parallel = 8;
  std::string shard;
};

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

// The schema file's text and its parsed form.
std::pair<std::string, ringlm::guided::Json> read_schema(const std::string& path) {
  std::string text = ringlm::cli::read_text_file(path);
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
  std::map<std::string, bool> state;
  std::vector<const ringlm::engine::InputRow*> todo;
};

RowPlan plan_rows(const ExtractOptions& o, const std::vector<ringlm::engine::InputRow>& rows) {
  RowPlan p;
  p.state = ringlm::engine::read_output_state(o.output);
  for (const auto& r : rows) {
    auto it = p.state.find(r.id);
    if (it == p.state.end() || (o.retry_failed && !it->second)) p.todo.push_back(&r);
  }
  if (o.limit > 0 && p.todo.size() > static_cast<std::size_t>(o.limit)) p.todo.resize(static_cast<std::size_t>(o.limit));
  return p;
}

std::size_t failed_in_output(const std::vector<ringlm::engine::InputRow>& rows, const RowPlan& p) {
  std::size_t n = 0;
  for (const auto& r : rows)
    if (auto it = p.state.find(r.id); it != p.state.end() && !it->second) ++n;
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
    if (auto it = p.state.find(r->id); it != p.state.end() && !it->second) redo.insert(r->id);
  const std::size_t retried = ringlm::engine::drop_records(o.output, redo);
  if (retried) {
    auto fresh = std::make_unique<ringlm::engine::JsonlAppender>(o.output);
    out = std::move(fresh);
  }
  return retried;
}

// Rows may name images ("image": path, or "images": [paths]) and audio clips ("audio" /
// "audios"), relative to the input file.
std::vector<std::filesystem::path> row_files(const OrderedJson& row, const char* one, const char* many,
                                             const std::filesystem::path& input_dir) {
  std::vector<std::filesystem::path> paths;
  for (const char* key : {one, many}) {
    if (!row.contains(key)) continue;
    const OrderedJson& v = row[key];
    if (v.is_string()) paths.push_back(v.get<std::string>());
    else if (v.is_array())
      for (const OrderedJson& p : v) {
        if (!p.is_string()) ringlm::fail("field ", key, ": expected file names (strings)");
        paths.push_back(p.get<std::string>());
      }
    else if (!v.is_null()) ringlm::fail("field ", key, ": expected a file name or a list of file names");
  }
  for (auto& f : paths) f = f.is_absolute() ? f : input_dir / f;
  return paths;
}

// Builds each row's prompt: the system message (instructions, and the schema unless
// --no-schema-in-prompt; the grammar enforces it either way) and the row's user message.
class RowPrompts {
 public:
  RowPrompts(ringlm::engine::Engine& engine, const ExtractOptions& o, const ringlm::guided::Json& schema)
      : engine_(engine),
        o_(o),
        media_(engine),
        input_dir_(std::filesystem::path(o.input).parent_path()),
        system_message_({{"role", "system"},
                         {"content", o.schema_in_prompt ? o.instructions + "\n" + schema.dump() : o.instructions}}) {}

  // The template's markup becomes control tokens, the row's text stays text (media rows too).
  std::vector<std::int32_t> render(const std::string& user) {
    return engine_.encode_chat(chat_request(user), o_.trust_control_tokens);
  }

  // The row's request (prompt, and the soft-token embeddings of its media).
  ringlm::engine::SequenceRequest request(const ringlm::engine::InputRow& row, const ringlm::engine::GenerationParams& params,
                                          int* image_tokens, int* audio_tokens) {
    ringlm::engine::SequenceRequest req;
    const std::string user = ringlm::engine::fill_prompt_template(o_.prompt_template, row.data);
    std::vector<ringlm::vision::RgbImage> images;
    for (const auto& f : row_files(row.data, "image", "images", input_dir_)) images.push_back(ringlm::vision::read_image_file(f));
    std::vector<ringlm::audio::AudioClip> audios;
    for (const auto& f : row_files(row.data, "audio", "audios", input_dir_)) audios.push_back(ringlm::audio::read_audio_file(f, 0));
    req.params = params;
    if (images.empty() && audios.empty()) {
      req.prompt = render(user);
      return req;
    }
    // Media rows: the template renders one placeholder per image and per clip before the
    // text, and the soft tokens replace those rows' embeddings while the prompt runs.
    OrderedJson parts = OrderedJson::array();
    for (std::size_t i = 0; i < images.size(); ++i) parts.push_back({{"type", "image"}});
    for (std::size_t i = 0; i < audios.size(); ++i) parts.push_back({{"type", "audio"}});
    parts.push_back({{"type", "text"}, {"text", user}});
    ringlm::engine::MediaPrompt mp =
        media_.build_chat(chat_request(parts), o_.trust_control_tokens, images, audios, o_.image_tokens);
    req.prompt = std::move(mp.ids);
    req.params.prompt_embeddings = mp.embeddings;
    *image_tokens = mp.image_tokens;
    *audio_tokens = mp.audio_tokens;
    return req;
  }

 private:
  ringlm::chat::ChatRequest chat_request(const OrderedJson& content) const {
    ringlm::chat::ChatRequest req;
    req.messages.push_back(system_message_);
    req.messages.push_back({{"role", "user"}, {"content", content}});
    req.add_generation_prompt = true;
    return req;
  }

  ringlm::engine::Engine& engine_;
  const ExtractOptions& o_;
  ringlm::engine::MediaEncoder media_;
  std::filesystem::path input_dir_;
  OrderedJson system_message_;
};

// A row's record from its generation (or error): ok with the validated output, or the error.
OrderedJson row_record(const ringlm::engine::InputRow& row, const ringlm::engine::SequenceOutcome* outcome,
                       const std::string& error, int image_tokens, int audio_tokens,
                       const ringlm::guided::Validator& validator) {
  using namespace ringlm;
  OrderedJson rec = {{"id", row.id}, {"line", row.line}};
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

void extract(const ExtractOptions& o) {
  using namespace ringlm;
  const auto [schema_text, schema] = read_schema(o.schema_file);
  guided::Validator validator(schema);

  if (o.parallel < 1) fail("--parallel must be at least 1, got ", o.parallel);
  const auto rows = shard_rows(o);
  RowPlan plan = plan_rows(o, rows);  // read-only: nothing is created until the model and the schema have loaded
  if (plan.todo.empty()) {
    const std::size_t failed = failed_in_output(rows, plan);
    std::fprintf(stderr, "ringlm extract: %zu rows in %s, all in %s, 0 to do", rows.size(), o.input.c_str(),
                 o.output.c_str());
    if (failed) std::fprintf(stderr, " (%zu failed; --retry-failed runs them again)", failed);
    std::fputc('\n', stderr);
    if (failed) throw cli::ExitStatus{kExitRowsFailed};
    return;
  }

  engine::Engine engine(o.model.engine_options());
  // A schema that does not compile fails here, before any row; in lenient mode say what only the
  // validator (run on every reply below) checks.
  for (const auto& u : engine.grammar_for_schema(schema_text)->unenforced())
    std::fprintf(stderr, "ringlm extract: schema-mode lenient: not enforced while generating, checked after: %s\n", u.c_str());

  auto out = std::make_unique<engine::JsonlAppender>(o.output);  // locks it: never recover a file in use
  engine::recover_output(o.output);
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
  engine::BatchScheduler sched(engine, so);
  RowPrompts prompts(engine, o, schema);
  // The prompt prefix every row shares (instructions + schema) is prefilled once and pinned.
  {
    auto a = prompts.render("A"), b = prompts.render("B");
    std::size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    sched.pin_prefix(std::span<const std::int32_t>(a.data(), n));
  }

  auto params = o.sampling.params();
  params.json_schema = schema_text;
  const bool show = o.progress || (!o.no_progress && isatty(fileno(stderr)));
  const auto t0 = Clock::now();
  std::size_t finished = 0, failed = 0;
  // Builds a row's record from its generation (or error) and appends it at once.
  auto record = [&](const engine::InputRow& row, Clock::time_point r0, const engine::SequenceOutcome* outcome,
                    const std::string& error, int image_tokens, int audio_tokens) {
    OrderedJson rec = row_record(row, outcome, error, image_tokens, audio_tokens, validator);
    if (!rec["ok"].get<bool>()) ++failed;
    rec["seconds"] = std::chrono::duration<double>(Clock::now() - r0).count();
    out->append(rec);
    plan.state[row.id] = rec["ok"].get<bool>();
    ++finished;
    if (show) draw_progress(finished, plan.todo.size(), failed, std::chrono::duration<double>(Clock::now() - t0).count());
  };
  std::size_t next = 0;
  for (;;) {
    // Fill the free slots (between steps: on_done never admits).
    while (next < plan.todo.size() && sched.has_room()) {
      const engine::InputRow& row = *plan.todo[next++];
      const auto r0 = Clock::now();
      try {
        if (!row.error.empty()) fail(row.error);
        int image_tokens = 0, audio_tokens = 0;
        engine::SequenceRequest req = prompts.request(row, params, &image_tokens, &audio_tokens);
        req.on_done = [&record, &row, r0, image_tokens, audio_tokens](engine::SequenceOutcome&& outcome) {
          record(row, r0, &outcome, {}, image_tokens, audio_tokens);
        };
        sched.admit(std::move(req));
      } catch (const Error& e) {
        record(row, r0, nullptr, e.what(), 0, 0);
      }
    }
    if (sched.step() == 0 && next >= plan.todo.size()) break;
  }
  const double total = std::chrono::duration<double>(Clock::now() - t0).count();
  if (show) std::fputc('\n', stderr);
  std::fprintf(stderr, "ringlm extract: %zu rows done (%zu failed) in %.2f s, %.2f rows/s\n", finished, failed, total,
               total > 0 ? finished / total : 0.0);
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
  sub->add_option("--input", opts->input, "Input rows, one JSON object per line")->required();
  sub->add_option("--output", opts->output, "Output JSONL (appended; a re-run resumes)")->required();
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
  sub->add_option("--shard", opts->shard,
                  "K/N: only input lines K+1, K+1+N, ... (every N-th line from line K+1), for N machines or pods");
  sub->add_flag("--retry-failed", opts->retry_failed,
                "Run again the rows whose last record failed (the output keeps one final record per id)");
  sub->callback([opts] { extract(*opts); });
}
