// `ringlm chat`: an interactive multi-turn conversation. The KV cache is kept between
// turns: each new turn prefills only the tokens that follow what the cache already holds.
// Ctrl-C stops the reply being written and keeps the conversation (the part already written
// stays as the model's turn); Ctrl-C twice at an empty prompt, /exit or end of input quits.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "chat/gemma_reply.h"
#include "cli/command.h"
#include "cli/common_options.h"
#include "cli/interrupt.h"
#include "cli/line_reader.h"
#include "engine/generator.h"
#include "util/error.h"

namespace {

struct ChatOptions {
  ringlm::cli::ModelFlags model;
  ringlm::cli::SamplingFlags sampling;
  ringlm::cli::DraftFlags draft;
  std::string system;
  std::string load;
  bool thinking = false;
  bool stats = false;
  bool trust_control_tokens = false;
};

constexpr const char* kHelp =
    "  /help         this list\n"
    "  /reset        start a new conversation (asks first)\n"
    "  /save FILE    write the conversation as JSON ({\"messages\": [...]})\n"
    "  /load FILE    continue a conversation saved with /save\n"
    "  /exit         quit (also /quit, end of input, or Ctrl-C twice at the prompt)\n"
    "  Ctrl-C while the model writes stops the reply; the conversation is kept.\n"
    "  A line that starts with // is sent as a message starting with /.\n";

using Json = nlohmann::ordered_json;

void save_conversation(const Json& messages, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) ringlm::fail(path, ": cannot open for writing");
  out << Json{{"messages", messages}}.dump(2) << "\n";
  if (!out) ringlm::fail(path, ": write error");
}

// Messages of a file written by /save (or any {"messages": [...]} request body).
Json load_conversation(const std::string& path) {
  Json j;
  try {
    j = Json::parse(ringlm::cli::read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    ringlm::fail(path, ": not valid JSON: ", e.what());
  }
  if (!j.is_object() || !j.contains("messages") || !j["messages"].is_array())
    ringlm::fail(path, ": expected {\"messages\": [...]}");
  for (std::size_t i = 0; i < j["messages"].size(); ++i) {
    const Json& m = j["messages"][i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") || !m["content"].is_string())
      ringlm::fail(path, ": messages[", i, "] needs a string role and content");
  }
  return j["messages"];
}

void chat_loop(const ChatOptions& o) {
  using namespace ringlm;
  const engine::DraftParams draft = o.draft.params();  // checked before the model loads
  engine::Engine engine(o.model.engine_options());
  engine::Generator gen(engine);
  chat::ChatRequest req;
  auto start_over = [&] {
    req.messages = Json::array();
    if (!o.system.empty()) req.messages.push_back({{"role", "system"}, {"content", o.system}});
  };
  start_over();
  if (!o.load.empty()) req.messages = load_conversation(o.load);
  if (o.thinking) req.enable_thinking = true;
  req.add_generation_prompt = true;

  cli::CtrlC ctrl_c;
  cli::LineReader reader(cli::default_history_file());
  std::fprintf(stderr, "ringlm chat: type a message; /help lists the commands, /exit quits\n");
  const char* prompt = reader.interactive() ? "> " : "";
  bool warned_exit = false;  // a first Ctrl-C at the prompt only explains how to leave
  while (true) {
    cli::CtrlC::clear();
    auto got = reader.read(prompt);
    if (!got) {
      if (!cli::CtrlC::pressed()) break;  // end of input
      if (warned_exit) break;
      warned_exit = true;
      std::fprintf(stderr, "\n(Ctrl-C again or /exit to quit)\n");
      continue;
    }
    warned_exit = false;
    std::string line = *got;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/help") {
      std::fputs(kHelp, stderr);
      continue;
    }
    if (line == "/reset") {
      auto answer = reader.read("Start a new conversation? [y/N] ", /*remember=*/false);
      if (answer && (*answer == "y" || *answer == "Y" || *answer == "yes")) {
        start_over();
        gen.reset();
        std::fprintf(stderr, "(new conversation)\n");
      } else {
        std::fprintf(stderr, "(kept the conversation)\n");
      }
      continue;
    }
    if (line.rfind("/save", 0) == 0 || line.rfind("/load", 0) == 0) {
      const std::string path = line.size() > 6 ? line.substr(6) : "";
      if (path.empty() || line[5] != ' ') {
        std::fprintf(stderr, "usage: %s FILE\n", line.substr(0, 5).c_str());
        continue;
      }
      try {
        if (line[1] == 's') {
          save_conversation(req.messages, path);
          std::fprintf(stderr, "(saved %zu messages to %s)\n", req.messages.size(), path.c_str());
        } else {
          req.messages = load_conversation(path);
          std::fprintf(stderr, "(loaded %zu messages from %s)\n", req.messages.size(), path.c_str());
        }
      } catch (const Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
      }
      continue;
    }
    if (line.rfind("//", 0) == 0) {
      line.erase(0, 1);
    } else if (line[0] == '/') {
      std::fprintf(stderr, "unknown command %s (/help lists them; start with // to send a message beginning with /)\n",
                   line.c_str());
      continue;
    }
    if (line.empty()) continue;

    req.messages.push_back({{"role", "user"}, {"content", line}});
    auto ids = engine.encode_chat(req, o.trust_control_tokens);
    auto params = o.sampling.params();
    params.draft = draft;
    cli::warn_if_context_cuts(ids.size(), params.max_tokens, gen.session().context_capacity());
    std::size_t streamed = 0;
    engine::GenerationResult result;
    try {
      result = gen.generate(ids, params, [&streamed](const engine::TokenEvent& e) {
        std::fwrite(e.text.data(), 1, e.text.size(), stdout);
        std::fflush(stdout);
        streamed += e.text.size();
        return !cli::CtrlC::pressed();  // Ctrl-C: stop at this token
      });
    } catch (const Error& e) {
      req.messages.erase(req.messages.end() - 1);  // the turn did not happen
      std::fprintf(stderr, "error: %s\n", e.what());
      continue;
    }
    if (result.text.size() > streamed) std::fwrite(result.text.data() + streamed, 1, result.text.size() - streamed, stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (result.finish == engine::FinishReason::Cancelled) std::fprintf(stderr, "[stopped]\n");
    if (result.finish == engine::FinishReason::Length) {  // never shown as if the model had finished
      if (std::string(engine::length_limit(result, params.max_tokens)) == "max_tokens")
        std::fprintf(stderr, "[cut by --max-tokens %d]\n", params.max_tokens);
      else
        std::fprintf(stderr, "[cut: the context is full (--ctx %lld tokens); /reset or /save and start over]\n",
                     static_cast<long long>(gen.session().context_capacity()));
    }
    if (o.stats)
      std::fprintf(stderr, "[%d prompt tokens, %d reused from the cache, %d generated, TTFT %.3f s]\n",
                   result.prompt_tokens, result.cached_prompt_tokens, result.completion_tokens, result.ttft_s);
    req.messages.push_back({{"role", "assistant"}, {"content", result.text}});
  }
}

}  // namespace

RINGLM_COMMAND(chat) {
  auto opts = std::make_shared<ChatOptions>();
  auto* sub = app.add_subcommand("chat", "Interactive multi-turn chat (line editing and history on a terminal; /help)");
  sub->footer("Example:\n  ringlm chat --model DIR --system \"You are terse.\" --temperature 0.7");
  opts->model.add_to(sub);
  opts->sampling.add_to(sub);
  opts->draft.add_to(sub);
  sub->add_option("--system", opts->system, "A system message");
  sub->add_option("--load", opts->load, "Continue a conversation saved with /save");
  sub->add_flag("--enable-thinking", opts->thinking, "Gemma 4 thinking mode");
  sub->add_flag("--trust-control-tokens", opts->trust_control_tokens,
                "Parse control tokens typed in messages (e.g. <turn|>) as control tokens");
  sub->add_flag("--stats", opts->stats, "Print per-turn token counts (incl. cache reuse) to stderr");
  sub->callback([opts] { chat_loop(*opts); });
}
