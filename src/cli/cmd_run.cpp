// `ringlm run`: one prompt through the chat template, the reply streamed to stdout.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "chat/gemma_reply.h"
#include "cli/command.h"
#include "cli/common_options.h"
#include "engine/generator.h"
#include "engine/media_prompt.h"
#include "guided/validator.h"
#include "util/error.h"

namespace {

struct RunOptions {
  ringlm::cli::ModelFlags model;
  ringlm::cli::SamplingFlags sampling;
  ringlm::cli::DraftFlags draft;
  std::string prompt, prompt_file, system, schema_file;
  std::vector<std::string> stop;
  std::vector<std::string> images, audios;
  int image_tokens = 0;
  bool raw = false;
  bool thinking = false;
  bool schema_in_prompt = false;
  int thinking_budget = 0;
  bool stats = false;
};

void run(const RunOptions& o) {
  using namespace ringlm;
  if (!o.prompt.empty() && !o.prompt_file.empty()) fail("give either --prompt or --file, not both");
  std::string user = o.prompt;
  if (!o.prompt_file.empty()) user = cli::read_text_file(o.prompt_file);  // "-": standard input
  const bool media = !o.images.empty() || !o.audios.empty();
  if (o.prompt_file.empty() && o.prompt.empty() && !media && !isatty(fileno(stdin)))
    user = cli::read_text_file("-");  // piped: echo hi | ringlm run
  const engine::DraftParams draft = o.draft.params();  // checked before the model loads
  if (user.empty() && !media)
    fail("give a prompt with --prompt TEXT, --file FILE, --file - or on a piped standard input");
  // Decoded (and size-checked) before the model loads, so a bad file fails fast.
  std::vector<vision::RgbImage> images;
  for (const auto& f : o.images) images.push_back(vision::read_image_file(f));
  std::vector<audio::AudioClip> audios;  // at the file's rate: resampled once the tower is known
  for (const auto& f : o.audios) audios.push_back(audio::read_audio_file(f, 0));

  engine::Engine engine(o.model.engine_options());
  engine::Generator gen(engine);
  std::vector<std::int32_t> ids;
  engine::MediaPrompt media_prompt;
  chat::ChatRequest req;
  std::string schema_text = o.schema_file.empty() ? std::string() : cli::read_text_file(o.schema_file);
  if (!o.raw) {
    std::string system = o.system;
    if (o.schema_in_prompt && !schema_text.empty())
      system += (system.empty() ? "" : "\n\n") + std::string("Reply with one JSON value that follows this JSON Schema:\n") +
                guided::Json::parse(schema_text).dump();
    if (!system.empty()) req.messages.push_back({{"role", "system"}, {"content", system}});
    if (!media) {
      req.messages.push_back({{"role", "user"}, {"content", user}});
    } else {
      // One image content part per --image, one audio part per --audio, then the text (as
      // Gemma's examples put them).
      nlohmann::ordered_json parts = nlohmann::ordered_json::array();
      for (std::size_t i = 0; i < images.size(); ++i) parts.push_back({{"type", "image"}});
      for (std::size_t i = 0; i < audios.size(); ++i) parts.push_back({{"type", "audio"}});
      if (!user.empty()) parts.push_back({{"type", "text"}, {"text", user}});
      req.messages.push_back({{"role", "user"}, {"content", parts}});
    }
    req.add_generation_prompt = true;
    if (o.thinking) req.enable_thinking = true;
  }
  if (!media) {
    ids = o.raw ? engine.encode_text(user) : engine.encode_chat(req);
  } else {
    // With --raw the text carries one <|image|> placeholder per --image and one <|audio|>
    // per --audio itself.
    engine::MediaEncoder encoder(engine);
    const bool bos = o.raw && engine.tokenizer().add_bos_default();
    media_prompt = o.raw ? encoder.build(user, images, audios, o.image_tokens, bos)
                         : encoder.build_chat(req, /*trust_control_tokens=*/false, images, audios, o.image_tokens);
    ids = media_prompt.ids;
  }

  auto params = o.sampling.params();
  params.stop = o.stop;
  params.draft = draft;
  if (!o.schema_file.empty()) {
    params.json_schema = schema_text;
    // Thinking on: the model thinks freely in its thought channel, the schema applies after it.
    params.guided_thinking = o.thinking;
    params.thinking_budget = o.thinking_budget;
    for (const auto& u : engine.grammar_for(params)->unenforced())
      std::fprintf(stderr, "ringlm run: schema-mode lenient: not enforced while generating: %s\n", u.c_str());
  }
  params.prompt_embeddings = media_prompt.embeddings;
  cli::warn_if_context_cuts(ids.size(), params.max_tokens, gen.session().context_capacity());
  std::size_t streamed = 0;
  auto result = gen.generate(ids, params, [&streamed](const engine::TokenEvent& e) {
    std::fwrite(e.text.data(), 1, e.text.size(), stdout);
    std::fflush(stdout);
    streamed += e.text.size();
    return true;
  });
  std::fwrite(result.text.data() + streamed, 1, result.text.size() - streamed, stdout);
  std::fputc('\n', stdout);
  const bool cut = result.finish == engine::FinishReason::Length;
  const std::string limit = !cut ? std::string()
                            : std::string(engine::length_limit(result, params.max_tokens)) == "max_tokens"
                                ? "--max-tokens " + std::to_string(params.max_tokens)
                                : "the context (--ctx " + std::to_string(gen.session().context_capacity()) + " tokens)";
  int status = 0;
  if (!params.json_schema.empty()) {
    // Never lie: a guided reply is one complete value that follows the schema, or an error
    // (exit 3, as `extract` marks such a row), never a cut-off object printed with exit 0.
    // Lenient mode: what the grammar did not enforce is checked now, by the validator (on
    // the answer: a thought channel before it is not part of the value).
    std::string why;
    const std::string answer = params.guided_thinking ? chat::parse_gemma_reply(result.text).content : result.text;
    auto reply = guided::Json::parse(answer, nullptr, false);
    if (reply.is_discarded()) {
      why = cut ? "the reply was cut by " + limit + " before its JSON value was complete"
                : "the reply is not complete JSON (ended by " + std::string(engine::finish_reason_name(result.finish)) +
                      (o.stop.empty() ? ")" : ", --stop given)");
    } else if (!engine.grammar_for(params)->unenforced().empty() &&
               !guided::Validator(guided::Json::parse(params.json_schema)).validate(reply, &why)) {
      why = "the reply does not satisfy the schema: " + why;
    }
    if (!why.empty()) {
      std::fprintf(stderr, "ringlm run: error: %s%s\n", why.c_str(), cut ? " (raise it and run again)" : "");
      status = 3;
    }
  } else if (cut) {
    std::fprintf(stderr, "ringlm run: the reply was cut by %s\n", limit.c_str());
  }
  if (o.stats) {
    std::fprintf(stderr, "ringlm: %d prompt tokens, %d generated (%s), TTFT %.3f s, %.2f tok/s\n", result.prompt_tokens,
                 result.completion_tokens, engine::finish_reason_name(result.finish), result.ttft_s,
                 result.completion_tokens > 1 && result.total_s > result.ttft_s
                     ? (result.completion_tokens - 1) / (result.total_s - result.ttft_s)
                     : 0.0);
    if (media)
      std::fprintf(stderr, "ringlm: %zu image(s), %d soft tokens; %zu audio clip(s), %d soft tokens; encoded in %.3f s\n",
                   images.size(), media_prompt.image_tokens, audios.size(), media_prompt.audio_tokens,
                   media_prompt.encode_seconds);
    if (result.guided_steps > 0)
      std::fprintf(stderr, "ringlm: %d guided steps, %d on the subset LM head\n", result.guided_steps,
                   result.subset_head_steps);
    if (result.drafted_tokens > 0)
      std::fprintf(stderr, "ringlm: %d drafted tokens, %d accepted\n", result.drafted_tokens, result.accepted_drafts);
  }
  if (status != 0) throw cli::ExitStatus{status};
}

}  // namespace

RINGLM_COMMAND(run) {
  auto opts = std::make_shared<RunOptions>();
  auto* sub = app.add_subcommand("run", "Generate a reply to one prompt, streamed to stdout");
  sub->footer("Example:\n  echo \"Classify: my order never arrived\" | ringlm run --json-schema examples/ticket.schema.json\n"
              "Exit status 3: a --json-schema reply cut by --max-tokens or the context, or that fails the schema "
              "(stderr says which); 2: a usage error");
  opts->model.add_to(sub);
  opts->sampling.add_to(sub);
  opts->draft.add_to(sub);
  sub->add_option("--prompt,-p", opts->prompt, "The user message");
  sub->add_option("--file,-f", opts->prompt_file, "Read the user message from a file (- = standard input)");
  sub->add_option("--system", opts->system, "A system message");
  sub->add_option("--json-schema", opts->schema_file, "Constrain the reply to this JSON Schema (file)");
  sub->add_flag("--schema-in-prompt", opts->schema_in_prompt,
                "Also describe the --json-schema to the model in the system message (off by default)");
  sub->add_option("--stop", opts->stop, "Stop string (repeatable)");
  sub->add_option("--image", opts->images, "An image for the user message: JPEG, PNG or WebP (repeatable)");
  sub->add_option("--audio", opts->audios,
                  "An audio clip for the user message: WAV, FLAC, OGG or MP3, at most 30 s (repeatable)");
  sub->add_option("--image-tokens", opts->image_tokens,
                  "Soft tokens per image: 70, 140, 280, 560 or 1120 (default: the processor config's)");
  sub->add_flag("--raw", opts->raw, "Send the prompt as is, without the chat template");
  sub->add_flag("--enable-thinking", opts->thinking,
                "Let the model think first (Gemma 4 thinking mode); with --json-schema the schema applies "
                "after the thought channel");
  sub->add_option("--thinking-budget", opts->thinking_budget,
                  "With --enable-thinking and --json-schema: at most N tokens of thought, then the answer "
                  "(0 = no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--stats", opts->stats, "Print token counts and speed to stderr");
  sub->callback([opts] { run(*opts); });
}
