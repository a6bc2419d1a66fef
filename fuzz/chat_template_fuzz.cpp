// libFuzzer target for the Jinja chat-template interpreter: arbitrary template text is parsed
// and rendered against a fixed chat context under small limits. Anything other than success or
// ringlm::Error (crash, sanitizer report, another exception type, a hang) is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chat/jinja/template.h"
#include "util/error.h"

namespace {

const nlohmann::ordered_json& context() {
  static const auto ctx = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Hi <b>there</b> 😀"},
      {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
      {"role": "tool", "content": "42", "tool_call_id": "c1"}
    ],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "bos_token": "<bos>", "eos_token": "<eos>", "add_generation_prompt": true,
    "n": 3, "x": 1.5, "flag": false, "nothing": null
  })");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ringlm;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  jinja::RenderLimits limits;
  limits.max_output_bytes = 1u << 16;
  limits.max_steps = 20'000;
  limits.max_call_depth = 20;
  try {
    const jinja::Template tmpl(source, "fuzz");
    (void)tmpl.render(context(), limits);
  } catch (const Error&) {
  }
  return 0;
}
