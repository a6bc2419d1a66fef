// `ringlm chat`: an interactive multi-turn conversation. The KV cache is kept between
// turns: each new turn prefills only the tokens that follow what the cache already holds.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <unistd.h>

#include "chat/gemma_reply.h"
#include "chat/user_text.h"
#include "cli/command.h"
#include "cli/common_options.h"
#include "engine/generator.h"
#include "util/error.h"

namespace {

struct ChatOptions {
  ringlm::cli::ModelFlags model;
  ringlm::cli::SamplingFlags sampling;
  std::string system;
  bool thinking = false;
  bool stats = false;
  bool trust_control_tokens = false;
};

void chat_loop(const ChatOptions& o) {
  using namespace ringlm;
  engine::Engine engine(o.model.engine_options());
  engine::Generator gen(engine);
  chat::ChatRequest req;
  if (!o.system.empty()) req.messages.push_back({{"role", "system"}, {"content", o.system}});
  if (o.thinking) req.enable_thinking = true;
  req.add_generation_prompt = true;
  const bool tty = isatty(fileno(stdin));
  std::fprintf(stderr, "ringlm chat: type a message; /reset starts over, /exit (or end of input) quits\n");
  std::string line;
  while (true) {
    if (tty) std::fputs("> ", stderr);
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      req.messages.erase(req.messages.begin() + (o.system.empty() ? 0 : 1), req.messages.end());
      gen.reset();
      continue;
    }
    if (line.empty()) continue;
    req.messages.push_back({{"role", "user"}, {"content", line}});
    if (!engine.chat_template()) engine.render_chat(req);  // throws: no chat template
    auto ids = chat::encode_chat(*engine.chat_template(), engine.tokenizer(), req, o.trust_control_tokens);
    std::size_t streamed = 0;
    auto result = gen.generate(ids, o.sampling.params(), [&streamed](const engine::TokenEvent& e) {
      std::fwrite(e.text.data(), 1, e.text.size(), stdout);
      std::fflush(stdout);
      streamed += e.text.size();
      return true;
    });
    std::fwrite(result.text.data() + streamed, 1, result.text.size() - streamed, stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (o.stats)
      std::fprintf(stderr, "[%d prompt tokens, %d reused from the cache, %d generated, TTFT %.3f s]\n",
                   result.prompt_tokens, result.cached_prompt_tokens, result.completion_tokens, result.ttft_s);
    req.messages.push_back({{"role", "assistant"}, {"content", result.text}});
  }
}

}  // namespace

RINGLM_COMMAND(chat) {
  auto opts = std::make_shared<ChatOptions>();
  auto* sub = app.add_subcommand("chat", "Interactive multi-turn chat (reads messages from stdin)");
  opts->model.add_to(sub);
  opts->sampling.add_to(sub);
  sub->add_option("--system", opts->system, "A system message");
  sub->add_flag("--enable-thinking", opts->thinking, "Gemma 4 thinking mode");
  sub->add_flag("--trust-control-tokens", opts->trust_control_tokens,
                "Parse control tokens typed in messages (e.g. <turn|>) as control tokens");
  sub->add_flag("--stats", opts->stats, "Print per-turn token counts (incl. cache reuse) to stderr");
  sub->callback([opts] { chat_loop(*opts); });
}
