// libFuzzer target for long expression chains in chat templates: each input byte picks a
// piece (operator, filter, attribute, subscript, call, nesting) and a repeat count, so that a
// few bytes build the 10,000-term chains that byte-level template fuzzing never reaches. Every
// template must render or fail with ringlm::Error; none may crash or run away.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/jinja/template.h"
#include "util/error.h"

namespace {
constexpr const char* kPieces[] = {
    " + 1", " ~ 'a'", " * 2", " ** 1", " or 1", " and x", "|string", "|upper", "|length", "|default(1)",
    ".a", "[0]", "()", " if 1 else 2", " is defined", " == 1", " in [1]", "(", ")", "[", "]", " not ", "-", ", 1",
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string expr = "x";
  for (std::size_t i = 0; i < size && expr.size() < (1u << 20); ++i) {
    const std::size_t which = data[i] % (sizeof kPieces / sizeof kPieces[0]);
    const int repeat = (data[i] >> 5) == 7 ? 4000 : 1 + (data[i] >> 5);
    for (int r = 0; r < repeat; ++r) expr += kPieces[which];
  }
  const std::string src = (size % 2 ? "{{ " : "{% set y = ") + expr + (size % 2 ? " }}" : " %}{{ y }}");
  try {
    ringlm::jinja::Template t(src, "chain.jinja");
    ringlm::jinja::RenderLimits limits;
    limits.max_steps = 100000;
    limits.max_output_bytes = 1 << 20;
    limits.max_work_bytes = 16 << 20;
    (void)t.render(nlohmann::ordered_json{{"x", {{"a", 1}}}}, limits);
  } catch (const ringlm::Error&) {
  }
  return 0;
}
