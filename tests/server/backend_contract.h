// What the HTTP server relies on from a Backend, as reusable checks: run them against the fake
// (backend_contract_test.cpp) and against the engine-backed Backend on the tiny model, e.g.
//
//   auto b = ringlm::server::make_engine_backend({.engine = {.model_dir = tiny}, .slots = 2});
//   ringlm::server::testing::check_backend_contract(*b);
//
// Each check asserts invariants, not exact text, so any model passes if the plumbing is right.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "server/backend.h"
#include "util/error.h"

namespace ringlm::server::testing {

inline bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

inline std::vector<std::int32_t> contract_prompt(Backend& b, const std::string& text) {
  nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", text}}});
  return b.render_chat(messages, nlohmann::json::array(), "auto", true, /*enable_thinking=*/false);
}

// Streams one generation, checking each event; returns the concatenated event text.
inline std::string contract_generate(Backend& b, int slot, const std::vector<std::int32_t>& prompt,
                                     const engine::GenerationParams& p, engine::GenerationResult& r,
                                     int cancel_after = -1) {
  std::string streamed;
  int events = 0;
  r = b.generate(slot, prompt, p, [&](const engine::TokenEvent& ev) {
    EXPECT_TRUE(valid_utf8(ev.text)) << "TokenEvent.text must hold complete UTF-8 only";
    EXPECT_LE(ev.logprob, 1e-4f);
    if (p.top_logprobs > 0) {
      EXPECT_EQ(static_cast<int>(ev.top.size()), p.top_logprobs);
      for (std::size_t k = 1; k < ev.top.size(); ++k) EXPECT_LE(ev.top[k].logprob, ev.top[k - 1].logprob);
    }
    streamed += ev.text;
    ++events;
    return cancel_after < 0 || events < cancel_after;
  });
  EXPECT_EQ(r.completion_tokens, events) << "one callback per generated token";
  EXPECT_GT(r.prompt_tokens, 0);
  EXPECT_LE(r.cached_prompt_tokens, r.prompt_tokens);
  EXPECT_TRUE(valid_utf8(r.text));
  return streamed;
}

inline void check_backend_contract(Backend& b) {
  ASSERT_GE(b.slots(), 1);
  ASSERT_GT(b.context_length(), 64);
  ASSERT_FALSE(b.model_id().empty());
  const std::int64_t kv_idle = b.kv_tokens_used();
  const auto prompt = contract_prompt(b, "Write a sentence about rings.");
  ASSERT_FALSE(prompt.empty());

  engine::GenerationParams p;
  p.max_tokens = 12;
  p.sampling.temperature = 0.0f;
  engine::GenerationResult r;

  // max_tokens is honoured; the streamed text is a prefix of result.text (the server sends the
  // rest, e.g. text held back for a stop string that never completed).
  std::string streamed = contract_generate(b, 0, prompt, p, r);
  EXPECT_LE(r.completion_tokens, 12);
  if (r.finish == engine::FinishReason::Length) {
    EXPECT_EQ(r.completion_tokens, 12);
  }
  EXPECT_EQ(r.text.compare(0, streamed.size(), streamed), 0) << "streamed text must be a prefix of result.text";

  // Greedy is reproducible on the same slot.
  engine::GenerationResult again;
  contract_generate(b, 0, prompt, p, again);
  EXPECT_EQ(again.text, r.text);

  // Stop strings: cut before the stop string, never emitted.
  if (r.text.size() >= 4) {
    engine::GenerationParams ps = p;
    ps.stop = {r.text.substr(r.text.size() / 2, 2)};
    engine::GenerationResult rs;
    std::string s = contract_generate(b, 0, prompt, ps, rs);
    EXPECT_EQ(rs.finish, engine::FinishReason::Stop);
    EXPECT_EQ(rs.text, r.text.substr(0, r.text.find(ps.stop[0])));
    EXPECT_EQ(s.find(ps.stop[0]), std::string::npos);
  }

  // Cancellation stops at once.
  engine::GenerationParams pc = p;
  pc.max_tokens = 64;
  engine::GenerationResult rc;
  contract_generate(b, 0, prompt, pc, rc, /*cancel_after=*/3);
  EXPECT_EQ(rc.finish, engine::FinishReason::Cancelled);
  EXPECT_EQ(rc.completion_tokens, 3);

  // Logprobs.
  engine::GenerationParams pl = p;
  pl.logprobs = true;
  pl.top_logprobs = 3;
  std::string bytes;  // token_text of every generated token, concatenated
  engine::GenerationResult rl = b.generate(0, prompt, pl, [&](const engine::TokenEvent& ev) {
    bytes += b.token_text(ev.id);
    return true;
  });
  // token_text gives a token's decoded bytes (what logprobs report as `bytes`).
  if (rl.finish == engine::FinishReason::Length) {
    EXPECT_EQ(bytes, rl.text);
  }

  // Guided JSON: a finished reply parses and has the required keys.
  engine::GenerationParams pj = p;
  pj.max_tokens = 200;
  pj.json_schema = R"({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false})";
  engine::GenerationResult rj;
  contract_generate(b, 0, contract_prompt(b, "Answer in JSON."), pj, rj);
  if (rj.finish == engine::FinishReason::Stop) {
    auto v = nlohmann::json::parse(rj.text, nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << rj.text;
    EXPECT_TRUE(v["ok"].is_boolean()) << rj.text;
  }

  // A schema that cannot compile is a ringlm::Error (→ 400), thrown before any token.
  engine::GenerationParams pb = p;
  pb.json_schema = "{not json";
  int tokens = 0;
  EXPECT_THROW(b.generate(0, prompt, pb, [&](const engine::TokenEvent&) { return ++tokens, true; }), Error);
  EXPECT_EQ(tokens, 0);

  // The chat template rejects what it cannot render with ringlm::Error.
  EXPECT_THROW(b.render_chat(nlohmann::json::array({{{"role", "no-such-role"}, {"content", "x"}}}), nlohmann::json::array(),
                             "auto", true, false),
               Error);

  // Thinking on changes the rendered prompt (the template asks the model to think).
  nlohmann::json hi = nlohmann::json::array({{{"role", "user"}, {"content", "hi"}}});
  EXPECT_NE(b.render_chat(hi, nlohmann::json::array(), "auto", true, true),
            b.render_chat(hi, nlohmann::json::array(), "auto", true, false));

  // The thought splitter: text without a thought is all content, whatever the pieces.
  {
    auto split = b.thought_splitter();
    ThoughtSplitter::Delta d;
    for (const char* piece : {"{\"a\"", ":1} <", "x"}) split->push(piece, d);
    split->finish(d);
    EXPECT_EQ(d.content, "{\"a\":1} <x");
    EXPECT_TRUE(d.reasoning.empty());
  }

  // All slots at once, from different threads.
  std::vector<std::thread> threads;
  std::atomic<int> finished{0};
  for (int slot = 0; slot < b.slots(); ++slot) {
    threads.emplace_back([&, slot] {
      engine::GenerationParams pt = p;
      pt.max_tokens = 8;
      engine::GenerationResult rt = b.generate(slot, prompt, pt, [](const engine::TokenEvent&) { return true; });
      if (rt.completion_tokens > 0) ++finished;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(finished.load(), b.slots());

  // parse_reply of plain text is that text as content.
  ParsedReply plain = b.parse_reply("just words");
  EXPECT_EQ(plain.content, "just words");
  EXPECT_TRUE(plain.tool_calls.empty());

  // KV accounting: nothing counts as used beyond what idle sessions keep, within capacity.
  EXPECT_LE(b.kv_tokens_used(), b.kv_tokens_capacity());
  EXPECT_GE(b.kv_tokens_used(), 0);
  (void)kv_idle;
}

}  // namespace ringlm::server::testing
