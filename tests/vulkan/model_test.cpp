// The tiny random Gemma 4 checkpoint (every structural feature of E2B: both attention kinds,
// KV sharing, double-wide MLP, per-layer embeddings, a 16-token sliding window) on the
// Vulkan device against the CPU path: prefill in chunks, decode, the sliding ring wrapping
// (ring of 16 + 64 slots, 150+ positions), truncate, and the deferred (subset) LM head.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <unistd.h>

#include "device_fixture.h"
#include "model/batch_forward.h"
#include "model/device_weights.h"
#include "model/gguf_model.h"
#include "model/model.h"
#include "model/testing/test_checkpoint.h"

namespace fs = std::filesystem;
using namespace ringlm;
using namespace ringlm::vulkan::testing;
using model::LogitsMode;
using model::Session;

namespace {

fs::path tiny_checkpoint() {
  static fs::path dir;
  if (dir.empty()) {
    dir = fs::temp_directory_path() / ("ringlm_vulkan_test_" + std::to_string(::getpid()));
    model::testing::TestCheckpointOptions o;
    o.seed = 42;
    model::testing::write_test_checkpoint(dir, o);
  }
  return dir;
}

struct Pair {
  std::shared_ptr<const model::Model> cpu, gpu;
};

// The same checkpoint loaded for the CPU (q4_0 weights, float32 activations: the f32
// accumulation the device does) and for the device.
Pair models(const std::shared_ptr<backend::Device>& dev) {
  model::ModelOptions o;
  o.threads = 2;
  o.weights = model::WeightFormat::q4_0;
  o.activations = kernels::Q4Activations::f32;
  Pair p;
  p.cpu = model::Model::load(tiny_checkpoint(), o);
  o.device = dev;
  p.gpu = model::Model::load(tiny_checkpoint(), o);
  return p;
}

double cosine(std::span<const float> a, std::span<const float> b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

std::size_t argmax(std::span<const float> v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

void expect_same_logits(std::span<const float> gpu, std::span<const float> cpu, const std::string& where) {
  ASSERT_EQ(gpu.size(), cpu.size()) << where;
  EXPECT_GE(cosine(gpu, cpu), 0.9999) << where;
  EXPECT_EQ(argmax(gpu), argmax(cpu)) << where;
}

std::vector<std::int32_t> random_ids(int n, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> ids(n);
  for (auto& id : ids) id = static_cast<std::int32_t>(rng() % vocab);
  return ids;
}

std::vector<std::int64_t> iota(std::int64_t from, int n) {
  std::vector<std::int64_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = from + i;
  return p;
}

}  // namespace

TEST(VulkanModel, PrefillAndDecodeMatchTheCpuPath) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const Pair m = models(dev);
  const int V = m.cpu->config().vocab_size;
  const auto ids = random_ids(150, V, 1);  // three chunks; the ring (80 slots) wraps
  Session cpu(m.cpu), gpu(m.gpu);
  std::vector<std::vector<float>> cpu_rows;
  cpu.prefill(ids, iota(0, 150), LogitsMode::All,
              [&](std::size_t, std::span<const float> r) { cpu_rows.emplace_back(r.begin(), r.end()); });
  std::size_t seen = 0;
  gpu.prefill(ids, iota(0, 150), LogitsMode::All, [&](std::size_t i, std::span<const float> r) {
    expect_same_logits(r, cpu_rows[i], "prefill position " + std::to_string(i));
    ++seen;
  });
  EXPECT_EQ(seen, 150u);
  // Greedy decode past the ring twice more, each side feeding its own argmax.
  std::int32_t next = static_cast<std::int32_t>(argmax(cpu_rows.back()));
  for (int p = 150; p < 330; ++p) {
    const auto c = cpu.decode(next, p);
    const std::vector<float> cv(c.begin(), c.end());
    const auto g = gpu.decode(next, p);
    expect_same_logits(g, cv, "decode position " + std::to_string(p));
    next = static_cast<std::int32_t>(argmax(cv));
  }
}

TEST(VulkanModel, LastTokenOnlyPrefillTruncateAndSubsetHead) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const Pair m = models(dev);
  const int V = m.cpu->config().vocab_size;
  const auto ids = random_ids(100, V, 2);
  Session cpu(m.cpu), gpu(m.gpu);
  // LogitsMode::Last skips the KV-shared layers for the prompt rows (row offset on the device).
  const auto c = cpu.prefill(ids, iota(0, 100));
  const std::vector<float> cv(c.begin(), c.end());
  expect_same_logits(gpu.prefill(ids, iota(0, 100)), cv, "last of 100");
  // Roll back into the middle (the ring still holds the window) and run a different tail.
  cpu.truncate(90);
  gpu.truncate(90);
  const auto tail = random_ids(5, V, 3);
  const auto c2 = cpu.prefill(tail, iota(90, 5));
  const std::vector<float> cv2(c2.begin(), c2.end());
  expect_same_logits(gpu.prefill(tail, iota(90, 5)), cv2, "after truncate to 90");
  // Deferred head: the hidden state stays on the host too; the subset head runs on the device.
  cpu.decode_hidden(7, 95);
  gpu.decode_hidden(7, 95);
  const std::vector<std::int32_t> allowed = {0, 5, 17, 99, 200};
  std::vector<float> hc(allowed.size()), hg(allowed.size());
  cpu.head_logits_compact(allowed, hc);
  gpu.head_logits_compact(allowed, hg);
  for (std::size_t i = 0; i < allowed.size(); ++i) EXPECT_NEAR(hg[i], hc[i], 2e-3f * (1 + std::abs(hc[i]))) << i;
  // Reset gives a fresh session.
  gpu.reset();
  cpu.reset();
  const auto c3 = cpu.prefill(tail, iota(0, 5));
  const std::vector<float> cv3(c3.begin(), c3.end());
  expect_same_logits(gpu.prefill(tail, iota(0, 5)), cv3, "after reset");
}

TEST(VulkanModel, F32KvCacheIsAClearError) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const Pair m = models(dev);
  EXPECT_THROW(Session(m.gpu, {.kv_type = kv::KvType::f32}), Error);
}

// Weights split by rows over several buffers (as past maxStorageBufferRange; here a 4 KiB
// cap forces it on the tiny models) give the logits of the unsplit upload bit for bit: each
// part computes its rows with the same arithmetic. q4p16 splits at 16-row groups (the tiny
// checkpoint), ggml blocks at rows (llama-quantize's Q4_K_M file: a Q8_0 LM head, K-quants).
TEST(VulkanModel, WeightsSplitOverBuffersGiveTheSameLogits) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const fs::path gguf = fs::path(RINGLM_TEST_DATA_DIR) / "gguf" / "tiny-Q4_K_M.gguf";
  for (const fs::path& path : {tiny_checkpoint(), gguf}) {
    SCOPED_TRACE(path.string());
    model::ModelOptions o;
    o.threads = 2;
    o.weights = path == gguf ? model::WeightFormat::stored : model::WeightFormat::q4_0;
    o.device = dev;
    const auto whole = model::load_model_any(path, o);
    o.device_weight_part_bytes = 4096;
    const auto split = model::load_model_any(path, o);
    ASSERT_EQ(whole->device_weights()->split_matrices, 0u);
    ASSERT_GT(split->device_weights()->split_matrices, 10u);
    EXPECT_GT(split->device_weights()->lm_head.parts.size(), 4u);
    const int V = whole->config().vocab_size;
    const auto ids = random_ids(24, V, 4);
    Session a(whole), b(split);
    std::vector<std::vector<float>> rows;
    a.prefill(ids, iota(0, 24), LogitsMode::All,
              [&](std::size_t, std::span<const float> r) { rows.emplace_back(r.begin(), r.end()); });
    b.prefill(ids, iota(0, 24), LogitsMode::All, [&](std::size_t i, std::span<const float> r) {
      ASSERT_TRUE(std::equal(r.begin(), r.end(), rows[i].begin())) << "prefill row " << i;
    });
    std::int32_t next = static_cast<std::int32_t>(argmax(rows.back()));
    for (int p = 24; p < 30; ++p) {
      const auto x = a.decode(next, p);
      const std::vector<float> xv(x.begin(), x.end());
      const auto y = b.decode(next, p);
      ASSERT_TRUE(std::equal(y.begin(), y.end(), xv.begin())) << "decode position " << p;
      next = static_cast<std::int32_t>(argmax(xv));
    }
  }
}
