// `ringlm template`: render a conversation with the model's chat template and tokenize it.
//   ringlm template --model DIR --messages FILE.json [--add-generation-prompt] [--enable-thinking]
// prints {"text": ..., "ids": [...]} (ids as transformers computes them: control tokens written
// in the messages are parsed too; --plain-user-text gives the ids serve, chat and extract use).
// `--cases FILE.jsonl` renders many variable sets (one JSON object per line, {"context": {...}})
// and prints one {"text"} or {"error"} line each;
// the differential tests use it with `--template FILE` to check the interpreter itself.
// `--image F` / `--audio F` (repeatable; the messages' {"type":"image"} / {"type":"audio"}
// parts take them in order) load the model with its towers and print the ids the model is
// fed, each placeholder expanded as Gemma4Processor does, plus "soft_positions": the
// positions that carry soft tokens (their id is the pad id, as Gemma4Model looks them up).
// `--expand-ids` builds them the way serve does (ids first, then each placeholder id expanded)
// instead of run/extract's way (placeholders expanded in the rendered text).
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "chat/chat_template.h"
#include "chat/gguf_template.h"
#include "chat/user_text.h"
#include "cli/command.h"
#include "cli/hf_model.h"
#include "engine/media_prompt.h"
#include "tokenizer/gguf_tokenizer_loader.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ringlm::fail("cannot read ", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

struct TemplateOptions {
  std::string model;
  std::string hf;  // -hf ORG/NAME[:QUANT]
  std::string messages;
  std::string template_file;
  std::string cases;
  bool add_generation_prompt = false;
  std::optional<bool> enable_thinking;
  bool no_ids = false;
  bool plain_user_text = false;
  std::vector<std::string> images, audios;
  int image_tokens = 0;
  bool expand_ids = false;
  int threads = 2;
};

ringlm::chat::ChatTemplate load_template(const TemplateOptions& o) {
  if (!o.template_file.empty()) {
    nlohmann::ordered_json tokens = nlohmann::ordered_json::object();
    if (!o.model.empty()) tokens = ringlm::chat::load_chat_template_any(o.model).special_tokens();
    return ringlm::chat::ChatTemplate(slurp(o.template_file), o.template_file, tokens);
  }
  return ringlm::chat::load_chat_template_any(o.model);
}

void run_cases(const TemplateOptions& o) {
  auto tmpl = load_template(o);
  std::ifstream in(o.cases);
  if (!in) ringlm::fail("cannot read ", o.cases);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    try {
      auto c = nlohmann::ordered_json::parse(line);
      if (!c.is_object() || !c.contains("context")) ringlm::fail(o.cases, ":", n, ": expected {\"context\": {...}}");
      out["text"] = tmpl.render_context(c["context"]);
    } catch (const ringlm::Error& e) {
      out["error"] = e.what();
    } catch (const nlohmann::json::exception& e) {
      ringlm::fail(o.cases, ":", n, ": invalid JSON: ", e.what());
    }
    std::cout << dump(out) << '\n';
  }
}

// With media: the prompt as `run` / `extract` (or, --expand-ids, `serve`) build it, towers run.
void run_media(const TemplateOptions& o, const ringlm::chat::ChatRequest& request) {
  using namespace ringlm;
  if (!o.template_file.empty()) fail("--image/--audio use the model's own chat template (drop --template)");
  std::vector<vision::RgbImage> images;
  for (const auto& f : o.images) images.push_back(vision::read_image_file(f));
  std::vector<audio::AudioClip> audios;
  for (const auto& f : o.audios) audios.push_back(audio::read_audio_file(f, 0));
  engine::Engine engine({.model_dir = o.model, .threads = o.threads, .weights = model::WeightFormat::stored});
  engine::MediaEncoder media(engine);
  const bool trust = !o.plain_user_text;
  engine::MediaPrompt p;
  if (o.expand_ids) {
    p = media.expand(engine.encode_chat(request, trust), images, std::vector<int>(images.size(), o.image_tokens), audios);
  } else {
    p = media.build_chat(request, trust, images, audios, o.image_tokens);
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["text"] = engine.render_chat(request);
  out["ids"] = p.ids;
  out["soft_positions"] = p.embeddings ? p.embeddings->positions : std::vector<std::int64_t>{};
  out["image_tokens"] = p.image_tokens;
  out["audio_tokens"] = p.audio_tokens;
  std::cout << dump(out) << '\n';
}

void run_template(const TemplateOptions& o) {
  if (o.model.empty()) ringlm::fail("--model is required (no built-in demo model found)");
  if (!o.cases.empty()) return run_cases(o);
  if (o.messages.empty()) ringlm::fail("--messages FILE.json is required");
  auto request = ringlm::chat::parse_chat_request(slurp(o.messages), o.messages);
  if (o.add_generation_prompt) request.add_generation_prompt = true;
  if (o.enable_thinking) request.enable_thinking = o.enable_thinking;
  if (!o.images.empty() || !o.audios.empty()) return run_media(o, request);
  auto tmpl = load_template(o);
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["text"] = tmpl.render(request);
  if (!o.no_ids) {
    auto tokenizer = ringlm::load_tokenizer_any(o.model);
    out["ids"] = o.plain_user_text ? ringlm::chat::encode_chat(tmpl, tokenizer, request)
                                   : ringlm::chat::encode_prompt(tokenizer, out["text"].get<std::string>());
  }
  std::cout << dump(out) << '\n';
}

}  // namespace

RINGLM_COMMAND(template) {
  auto opts = std::make_shared<TemplateOptions>();
  auto* sub = app.add_subcommand("template", "Render a conversation with the model's chat template and tokenize it");
  sub->footer("Example:\n  ringlm template --model DIR --messages m.json --add-generation-prompt");
  ringlm::cli::add_hf_option(sub, opts->hf, sub->add_option("--model,-m", opts->model, "Model or tokenizer directory"));
  sub->add_option("--messages", opts->messages, "JSON file {\"messages\": [...], \"tools\": [...]}");
  sub->add_flag("--add-generation-prompt", opts->add_generation_prompt, "End with the assistant turn header");
  sub->add_flag_function(
      "--enable-thinking,!--disable-thinking",
      [opts](std::int64_t n) { opts->enable_thinking = n > 0; },
      "Pass enable_thinking=true (or false) to the template; unset by default");
  sub->add_option("--template", opts->template_file, "Use this Jinja file instead of the model's template");
  sub->add_option("--cases", opts->cases, "Render each {\"context\": {...}} line of a JSONL file");
  sub->add_flag("--plain-user-text", opts->plain_user_text,
                "ids as serve/chat/extract compute them: control tokens written in the messages are plain text");
  sub->add_flag("--no-ids", opts->no_ids, "Print only the text (no tokenizer needed)");
  sub->add_option("--image", opts->images,
                  "An image for the messages' image parts, in order (repeatable; loads the model's vision tower)");
  sub->add_option("--audio", opts->audios,
                  "An audio clip for the messages' audio parts, in order (repeatable; loads the audio tower)");
  sub->add_option("--image-tokens", opts->image_tokens, "Soft tokens per image (default: the processor config's)");
  sub->add_flag("--expand-ids", opts->expand_ids,
                "With media: expand the placeholder ids of the tokenized prompt, as serve does");
  sub->add_option("--threads,-t", opts->threads, "Threads for the towers")->capture_default_str();
  sub->callback([opts] {
    // The demo model is found (or written) only when the command runs, not at registration.
    if (!opts->hf.empty()) opts->model = ringlm::cli::resolve_hf_model(opts->hf).model.string();
    if (opts->model.empty()) opts->model = ringlm::cli::default_model_dir();
    run_template(*opts);
  });
}
