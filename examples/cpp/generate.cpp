// A program linking the installed library: one guided reply from a model directory.
//   g++ -O2 generate.cpp $(pkg-config --cflags --libs ringlm) -o generate
//   ./generate MODEL_DIR "Classify: my order AB-1234 never arrived"
#include <cstdio>

#include "engine/generator.h"
#include "util/error.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR PROMPT\n", argv[0]);
    return 2;
  }
  try {
    ringlm::engine::Engine engine({.model_dir = argv[1], .weights = ringlm::model::WeightFormat::q4_0});
    ringlm::engine::Generator gen(engine);
    ringlm::chat::ChatRequest req;
    req.messages.push_back({{"role", "user"}, {"content", argv[2]}});
    req.add_generation_prompt = true;
    ringlm::engine::GenerationParams params;
    params.max_tokens = 120;
    params.json_schema = R"({"type":"object","properties":{"category":{"enum":["billing","shipping","other"]},
                            "urgent":{"type":"boolean"}},"required":["category","urgent"],
                            "additionalProperties":false})";
    const auto ids = engine.tokenizer().encode(engine.render_chat(req));
    const auto r = gen.generate(ids, params, nullptr);
    std::printf("%s\n", r.text.c_str());
  } catch (const ringlm::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
