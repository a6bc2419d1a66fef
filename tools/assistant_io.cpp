// Test driver for tests/model/assistant_reference_test.py: runs one Gemma 4 assistant step
// (model/assistant.h) on inputs read from a file and writes its outputs, for comparison with
// the float64 numpy reference.
//
//   assistant_io ASSISTANT_DIR IN OUT
// IN (little-endian): int64 position p; int32 n_sliding, n_full; float32 x[2 * backbone];
//   float32 K then V of the sliding cache [n_sliding][head_dim] (one KV head, positions
//   p - n_sliding .. p - 1), then K then V of the full cache [n_full][global_head_dim]
//   (positions 0 .. n_full - 1).
// OUT: float32 logits[vocab], float32 h_next[backbone]. Prints the argmax.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <vector>

#include "model/assistant.h"
#include "util/error.h"

using namespace ringlm;

int main(int argc, char** argv) try {
  if (argc != 4) fail("usage: assistant_io ASSISTANT_DIR IN OUT");
  auto m = model::AssistantModel::load(argv[1]);
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
  model::AssistantStep step(m, nullptr);
  step.run(x, p, sliding, full);
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
