// libFuzzer target for the gemma4-assistant GGUF loader (model/assistant_gguf.h, through
// AssistantModel::load as `--draft assistant:FILE.gguf` calls it): any file must either load
// or raise ringlm::Error. A file that loads must be runnable: one assistant step (every
// matrix, norm, the head and the projections, over a two-slot cache shaped as the config
// says the target's is) must stay inside its buffers, which ASan and UBSan check. Loaded
// twice: as stored (the float reference path) and with the target's kernel conversions
// (--weights q4_0 --activations int8x2: GGUF blocks repacked, float matrices quantized).
// Seeds: fuzz/corpus/assistant_gguf/micro_{q4_0,q8_0}.gguf, made by `ringlm make-test-model
// micro_q4_0.gguf --assistant --preset micro --seed 1 --dtype q4_0` (and q8_0): 4 layers,
// centroid head, 23 KB / 37 KB.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "model/assistant.h"
#include "util/error.h"

namespace {

using namespace ringlm;

// A config whose step would need more than this much scratch or work is only loaded, not
// run (a fuzzed header may declare a large vocabulary over a tiny tied table: the loader
// then refuses it, but a consistent large file would just be slow).
constexpr std::int64_t kMaxStepElems = 1 << 22;

void run_one_step(const std::shared_ptr<const model::AssistantModel>& a) {
  const model::AssistantConfig& c = a->config();
  const model::ModelConfig& t = c.text;
  std::int64_t work = static_cast<std::int64_t>(t.vocab_size) * t.hidden_size + 2LL * c.backbone_hidden * t.hidden_size;
  for (const model::LayerConfig& L : t.layers)
    work += 4LL * t.hidden_size * std::max<std::int64_t>(L.mlp_width, static_cast<std::int64_t>(t.num_heads) * L.head_dim);
  if (work > kMaxStepElems) return;
  // The target's caches as the step reads them: two slots at positions 0 and 1, per kind.
  struct Cache {
    std::vector<float> k, v;
    std::vector<std::int32_t> pos = {0, 1};
    kernels::KvSlots slots;
  } caches[2];
  for (int kind = 0; kind < 2; ++kind) {
    int d = 0;
    for (const model::LayerConfig& L : t.layers)
      if ((L.kind == model::AttentionKind::Sliding) == (kind == 0)) d = L.head_dim;
    if (d <= 0) continue;
    Cache& ch = caches[kind];
    const std::size_t n = 2 * static_cast<std::size_t>(t.num_kv_heads) * static_cast<std::size_t>(d);
    if (n > static_cast<std::size_t>(kMaxStepElems)) return;
    ch.k.assign(n, 0.25f);
    ch.v.assign(n, -0.5f);
    ch.slots = {ch.k.data(), ch.v.data(), ch.pos.data(), 2, t.num_kv_heads, d};
  }
  model::AssistantStep step(a, nullptr);
  std::vector<float> x(2 * static_cast<std::size_t>(c.backbone_hidden), 0.125f);
  try {
    step.run(x, 2, caches[0].slots, caches[1].slots);
    (void)step.argmax();
  } catch (const Error&) {
    // A refusal at run time (a cache shape the config contradicts) is an error, not a crash.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fuzz::write_scratch("assistant.gguf", data, size);
  for (const model::AssistantOptions& options :
       {model::AssistantOptions{}, model::AssistantOptions{model::WeightFormat::q4_0, kernels::Q4Activations::int8x2}}) {
    std::shared_ptr<const model::AssistantModel> a;
    try {
      a = model::AssistantModel::load(path, options);
    } catch (const Error&) {
      return 0;  // refused: the first load's message is enough (the second would give the same)
    }
    run_one_step(a);
  }
  return 0;
}
