#include "guided/reply_grammar.h"

#include "util/error.h"

namespace ringlm::guided {
namespace {

// Copies every state, rule and string body of `src` into `dst` (ids shifted past dst's own);
// returns the id `src`'s root rule has in dst.
uint32_t append_grammar(Grammar& dst, Grammar src) {
  const uint32_t S = uint32_t(dst.states.size()), R = uint32_t(dst.rule_start.size()),
                 B = uint32_t(dst.bodies.size());
  for (auto& st : src.states) {
    for (auto& e : st.edges) e.to += S;
    for (auto& e : st.eps) e += S;
    for (auto& c : st.calls) c.rule += R, c.ret += S;
    if (st.lazy_body >= 0) st.lazy_body += int32_t(B);
    dst.states.push_back(std::move(st));
  }
  for (uint32_t s : src.rule_start) dst.rule_start.push_back(s + S);
  for (auto& b : src.bodies) {
    b.to += S;
    dst.bodies.push_back(std::move(b));
  }
  for (auto& [key, state] : src.body_states)
    dst.body_states.emplace(std::make_tuple(std::get<0>(key) + B, std::get<1>(key), std::get<2>(key)), state + S);
  dst.distinct_keys = dst.distinct_keys || src.distinct_keys;
  dst.distinct_items = dst.distinct_items || src.distinct_items;
  dst.distinct_literals = dst.distinct_literals || src.distinct_literals;
  dst.unenforced.insert(dst.unenforced.end(), src.unenforced.begin(), src.unenforced.end());
  return src.root_rule + R;
}

// From `from`: optionally a thought channel, then `to` (epsilon when there is none or it is
// skipped: the model may answer without thinking).
void thought_channel(GrammarBuilder& b, uint32_t from, uint32_t to) {
  uint32_t body = b.new_state();
  b.bytes(from, body, marker::kChannelOpen, marker::kChannelOpen);
  b.bytes(body, body, 0x00, marker::kFirst - 1);  // free text: any byte but the markers
  b.bytes(body, to, marker::kChannelClose, marker::kChannelClose);
  b.eps(from, to);
}

}  // namespace

Grammar with_thought_channel(Grammar answer, bool thinking) {
  if (!thinking) return answer;
  Grammar g;
  uint32_t answer_rule = append_grammar(g, std::move(answer));
  GrammarBuilder b(&g);
  uint32_t root = b.new_rule();
  uint32_t after = b.new_state(), end = b.new_state();
  thought_channel(b, b.rule_start(root), after);
  b.call(after, answer_rule, end);
  b.set_final(end);
  return b.finish(root);
}

Grammar tool_call_grammar(std::vector<ToolGrammar> tools, bool thinking, bool parallel) {
  if (tools.empty()) fail("a tool-call grammar needs at least one tool");
  Grammar g;
  std::vector<uint32_t> rules;
  for (auto& t : tools) rules.push_back(append_grammar(g, std::move(t.arguments)));
  GrammarBuilder b(&g);
  uint32_t root = b.new_rule();
  uint32_t call_start = b.new_state(), args_end = b.new_state(), end = b.new_state();
  if (thinking) {
    thought_channel(b, b.rule_start(root), call_start);
  } else {
    b.eps(b.rule_start(root), call_start);
  }
  uint32_t opened = b.new_state();
  b.bytes(call_start, opened, marker::kToolCallOpen, marker::kToolCallOpen);
  uint32_t call_kw = b.new_state();
  b.literal(opened, call_kw, "call:");
  for (size_t i = 0; i < tools.size(); ++i) {
    uint32_t after_name = b.new_state();
    b.literal(call_kw, after_name, tools[i].name);
    b.call(after_name, rules[i], args_end);
  }
  b.bytes(args_end, end, marker::kToolCallClose, marker::kToolCallClose);
  b.set_final(end);
  if (parallel) b.eps(end, call_start);  // parallel calls: another one may follow
  return b.finish(root);
}

}  // namespace ringlm::guided
