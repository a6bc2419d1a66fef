// `ringlm template`: render a conversation with the model's chat template and tokenize it.
//   ringlm template --model DIR --messages FILE.json [--add-generation-prompt] [--enable-thinking]
// prints {"text": ..., "ids": [...]}. `--cases FILE.jsonl` renders many variable sets (one
// JSON object per line, {"context": {...}}) and prints one {"text"} or {"error"} line each;
// the differential tests use it with `--template FILE` to check the interpreter itself.
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "chat/chat_template.h"
#include "cli/command.h"
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
  std::string messages;
  std::string template_file;
  std::string cases;
  bool add_generation_prompt = false;
  std::optional<bool> enable_thinking;
  bool no_ids = false;
};

ringlm::chat::ChatTemplate load_template(const TemplateOptions& o) {
  if (!o.template_file.empty()) {
    nlohmann::ordered_json tokens = nlohmann::ordered_json::object();
    if (!o.model.empty()) tokens = ringlm::chat::ChatTemplate::load(o.model).special_tokens();
    return ringlm::chat::ChatTemplate(slurp(o.template_file), o.template_file, tokens);
  }
  return ringlm::chat::ChatTemplate::load(o.model);
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

void run_template(const TemplateOptions& o) {
  if (o.model.empty()) ringlm::fail("--model is required (no built-in demo model found)");
  if (!o.cases.empty()) return run_cases(o);
  if (o.messages.empty()) ringlm::fail("--messages FILE.json is required");
  auto tmpl = load_template(o);
  auto request = ringlm::chat::parse_chat_request(slurp(o.messages), o.messages);
  if (o.add_generation_prompt) request.add_generation_prompt = true;
  if (o.enable_thinking) request.enable_thinking = o.enable_thinking;
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["text"] = tmpl.render(request);
  if (!o.no_ids) {
    auto tokenizer = ringlm::Tokenizer::load(o.model);
    out["ids"] = ringlm::chat::encode_prompt(tokenizer, out["text"].get<std::string>());
  }
  std::cout << dump(out) << '\n';
}

}  // namespace

RINGLM_COMMAND(template) {
  auto opts = std::make_shared<TemplateOptions>();
  opts->model = ringlm::cli::default_model_dir();
  auto* sub = app.add_subcommand("template", "Render a conversation with the model's chat template and tokenize it");
  sub->footer("Example:\n  ringlm template --model DIR --messages m.json --add-generation-prompt");
  sub->add_option("--model", opts->model, "Model or tokenizer directory");
  sub->add_option("--messages", opts->messages, "JSON file {\"messages\": [...], \"tools\": [...]}");
  sub->add_flag("--add-generation-prompt", opts->add_generation_prompt, "End with the assistant turn header");
  sub->add_flag_function(
      "--enable-thinking,!--disable-thinking",
      [opts](std::int64_t n) { opts->enable_thinking = n > 0; },
      "Pass enable_thinking=true (or false) to the template; unset by default");
  sub->add_option("--template", opts->template_file, "Use this Jinja file instead of the model's template");
  sub->add_option("--cases", opts->cases, "Render each {\"context\": {...}} line of a JSONL file");
  sub->add_flag("--no-ids", opts->no_ids, "Print only the text (no tokenizer needed)");
  sub->callback([opts] { run_template(*opts); });
}
