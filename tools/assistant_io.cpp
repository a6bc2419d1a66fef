// Test driver for tests/model/assistant_reference_test.py: runs one Gemma 4 assistant step
// (model/assistant.h) on inputs read from a file and writes its outputs, for comparison with
// the float64 numpy reference.
//
//   assistant_io [--weights stored|q4_0] [--activations f32|int8|int8x2] [--time N] ASSISTANT IN OUT
// ASSISTANT: a checkpoint directory or a gemma4-assistant .gguf file; the options are
// model::AssistantOptions (default: stored, f32, the float reference path). --time N also
// runs the step N more times and prints the median ms per step to stderr (a timing aid).
// IN (little-endian): int64 position p; int32 n_sliding, n_full; float32 x[2 * backbone];
//   float32 K then V of the sliding cache [n_sliding][head_dim] (one KV head, positions
//   p - n_sliding .. p - 1), then K then V of the full cache [n_full][global_head_dim]
//   (positions 0 .. n_full - 1).
// OUT: float32 logits[vocab], float32 h_next[backbone]. Prints the argmax.
//
//   assistant_io --round TARGET_DIR ASSISTANT_DIR K OUT ID...
// One drafting round of engine::AssistantDrafter as the scheduler runs it: the target (float
// path, f32 KV) prefills the ids, t = argmax of its last logits, then the drafter drafts K
// tokens from (t, position n, the target's final-normed hidden row n - 1, the target's KV).
// OUT: int32 t, int32 drafts[K], float32 logits[K][vocab] (the assistant's, per step).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <cstdio>
#include <fstream>
#include <vector>

#include "engine/assistant_drafter.h"
#include "kernels/thread_pool.h"
#include "model/assistant.h"
#include "util/error.h"

using namespace ringlm;

namespace {
int round(int argc, char** argv) {
  if (argc < 7) fail("usage: assistant_io --round TARGET_DIR ASSISTANT_DIR K OUT ID...");
  auto target = model::Model::load(argv[2], {.weights = model::WeightFormat::stored});
  auto a = model::AssistantModel::load(argv[3]);
  const int k = std::atoi(argv[4]);
  std::vector<std::int32_t> ids;
  std::vector<std::int64_t> pos;
  for (int i = 6; i < argc; ++i) ids.push_back(std::atoi(argv[i])), pos.push_back(i - 6);
  model::Session s(target, {.kv_type = kv::KvType::f32});
  const std::span<const float> last = s.prefill(ids, pos);
  const auto t = static_cast<std::int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
  const std::vector<float> h(s.head_input().begin(), s.head_input().end());
  engine::AssistantDrafter d(a, target);
  std::vector<float> logits;
  d.set_step_observer([&](int, const model::AssistantStep& st) { logits.insert(logits.end(), st.logits().begin(), st.logits().end()); });
  d.set_target_state({&s, t, static_cast<std::int64_t>(ids.size()), h});
  std::vector<std::int32_t> drafts;
  d.propose({}, {}, k, drafts);
  std::ofstream out(argv[5], std::ios::binary);
  out.write(reinterpret_cast<const char*>(&t), 4);
  out.write(reinterpret_cast<const char*>(drafts.data()), std::streamsize(4 * drafts.size()));
  out.write(reinterpret_cast<const char*>(logits.data()), std::streamsize(4 * logits.size()));
  if (!out) fail(argv[5], ": cannot write");
  std::printf("%d", t);
  for (auto x : drafts) std::printf(" %d", x);
  std::printf("\n");
  return 0;
}
}  // namespace

int main(int argc, char** argv) try {
  if (argc > 1 && std::string(argv[1]) == "--round") return round(argc, argv);
  model::AssistantOptions opt;
  int time_steps = 0;
  while (argc > 2 && std::string(argv[1]).starts_with("--")) {
    const std::string flag = argv[1], v = argv[2];
    if (flag == "--weights" && (v == "stored" || v == "q4_0"))
      opt.weights = v == "q4_0" ? model::WeightFormat::q4_0 : model::WeightFormat::stored;
    else if (flag == "--activations" && (v == "f32" || v == "int8" || v == "int8x2"))
      opt.activations = v == "f32" ? kernels::Q4Activations::f32
                        : v == "int8" ? kernels::Q4Activations::int8 : kernels::Q4Activations::int8x2;
    else if (flag == "--time")
      time_steps = std::max(0, std::atoi(v.c_str()));
    else
      fail("assistant_io: bad option ", flag, " ", v);
    argc -= 2, argv += 2;
  }
  if (argc != 4) fail("usage: assistant_io [--weights W] [--activations A] ASSISTANT IN OUT");
  auto m = model::AssistantModel::load(argv[1], opt);
  const model::AssistantConfig& c = m->config();
  std::ifstream in(argv[2], std::ios::binary);
  std::int64_t p = 0;
  std::int32_t ns = 0, nf = 0;
  in.read(reinterpret_cast<char*>(&p), 8).read(reinterpret_cast<char*>(&ns), 4).read(reinterpret_cast<char*>(&nf), 4);
  if (!in || ns < 0 || nf < 0 || ns > 1 << 20 || nf > 1 << 20 || p < 0) fail(argv[2], ": bad header");
  const int dS = c.text.head_dim, dF = c.text.global_head_dim;
  std::vector<float> x(2 * static_cast<std::size_t>(c.backbone_hidden)), ks(std::size_t(ns) * dS), vs(ks.size()),
      kf(std::size_t(nf) * dF), vf(kf.size());
  for (auto* v : {&x, &ks, &vs, &kf, &vf}) in.read(reinterpret_cast<char*>(v->data()), std::streamsize(4 * v->size()));
  if (!in) fail(argv[2], ": truncated");
  std::vector<std::int32_t> ps(static_cast<std::size_t>(ns)), pf(static_cast<std::size_t>(nf));
  for (int i = 0; i < ns; ++i) ps[std::size_t(i)] = static_cast<std::int32_t>(p - ns + i);
  for (int i = 0; i < nf; ++i) pf[std::size_t(i)] = i;
  kernels::KvSlots sliding{ks.data(), vs.data(), ps.data(), ns, 1, dS};
  kernels::KvSlots full{kf.data(), vf.data(), pf.data(), nf, 1, dF};
  kernels::ParallelFor pool(kernels::default_thread_count());
  model::AssistantStep step(m, &pool);
  step.run(x, p, sliding, full);
  if (time_steps > 0) {
    std::vector<double> ms;
    for (int i = 0; i < time_steps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      step.run(x, p, sliding, full);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::fprintf(stderr, "assistant step: median %.3f ms over %d (min %.3f)\n", ms[ms.size() / 2], time_steps, ms[0]);
  }
  std::ofstream out(argv[3], std::ios::binary);
  out.write(reinterpret_cast<const char*>(step.logits().data()), std::streamsize(4 * step.logits().size()));
  out.write(reinterpret_cast<const char*>(step.h_next().data()), std::streamsize(4 * step.h_next().size()));
  if (!out) fail(argv[3], ": cannot write");
  std::printf("%d\n", step.argmax());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "assistant_io: %s\n", e.what());
  return 1;
}
