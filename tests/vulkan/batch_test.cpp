// model::BatchForward and the session's KV operations on the Vulkan device (tiny model):
// batched rows give the bits of the same chunks run by lone device sessions, at every batch
// size and with the default tiled threshold, and match the CPU f32 batch (cosine >= 0.9999,
// same argmax); snapshots, prefix copies and the prefix
// cache's export/import on the device give the logits of recomputing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <unistd.h>

#include "device_fixture.h"
#include "model/batch_forward.h"
#include "model/model.h"
#include "model/testing/test_checkpoint.h"
#include "tiny_checkpoint.h"
#include "vulkan/vulkan_device.h"

namespace fs = std::filesystem;
using namespace ringlm;
using namespace ringlm::vulkan::testing;
using model::BatchItem;
using model::LogitsMode;
using model::Session;

namespace {

struct Pair {
  std::shared_ptr<const model::Model> cpu, gpu;
};

Pair models(const std::shared_ptr<backend::Device>& dev) {
  return {load_tiny(11, nullptr, kernels::Q4Activations::f32), load_tiny(11, dev, kernels::Q4Activations::f32)};
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

std::vector<float> copy(std::span<const float> v) { return {v.begin(), v.end()}; }

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

TEST(VulkanBatch, RowsEqualLoneDeviceSessionsAndMatchTheCpuBatch) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const Pair m = models(dev);
  const int V = m.cpu->config().vocab_size;
  const std::vector<std::vector<std::int32_t>> prompts = {random_ids(40, V, 1), random_ids(21, V, 2),
                                                          random_ids(9, V, 3)};
  constexpr int kSeqs = 3;
  std::vector<Session> cpu, gpu, alone;
  for (int i = 0; i < kSeqs; ++i) {
    cpu.emplace_back(m.cpu);
    gpu.emplace_back(m.gpu);
    alone.emplace_back(m.gpu);
  }
  model::BatchForward cb(m.cpu, {.max_rows = 80, .max_items = 4}), gb(m.gpu, {.max_rows = 80, .max_items = 4});
  // Step 1: three prompts, one without logits, one with, one with the deferred head.
  const LogitsMode modes[] = {LogitsMode::None, LogitsMode::Last, LogitsMode::Hidden};
  std::vector<std::vector<std::int64_t>> pos;
  for (int i = 0; i < kSeqs; ++i) pos.push_back(iota(0, static_cast<int>(prompts[i].size())));
  std::vector<BatchItem> ci, gi;
  for (int i = 0; i < kSeqs; ++i) {
    ci.push_back({&cpu[i], prompts[i], pos[i], modes[i]});
    gi.push_back({&gpu[i], prompts[i], pos[i], modes[i]});
  }
  cb.run(ci);
  gb.run(gi);
  const auto lone1 = copy(alone[1].prefill(prompts[1], pos[1], LogitsMode::Last));
  alone[0].prefill(prompts[0], pos[0], LogitsMode::None);
  alone[2].prefill(prompts[2], pos[2], LogitsMode::Hidden);
  EXPECT_EQ(copy(gb.logits(1)), lone1) << "batched Last row differs from the lone device session";
  EXPECT_GE(cosine(gb.logits(1), cb.logits(1)), 0.9999);
  EXPECT_EQ(argmax(gb.logits(1)), argmax(cb.logits(1)));
  const auto gh = copy(gpu[2].head_input()), ah = copy(alone[2].head_input());
  EXPECT_EQ(gh, ah) << "batched Hidden row differs from the lone device session";
  // The deferred heads in one device pass, as each session's own head.
  Session* hidden[] = {&gpu[2]};
  gb.head_logits(hidden);
  EXPECT_EQ(copy(gb.head_row(0)), copy(alone[2].head_logits()));
  EXPECT_GE(cosine(gb.head_row(0), cpu[2].head_logits()), 0.9999);

  // Decode rows of all three together (the ring of 16 + 64 slots wraps for the first), each
  // fed the CPU's argmax so every side runs the same tokens.
  std::int32_t next[kSeqs] = {5, static_cast<std::int32_t>(argmax(cb.logits(1))), 7};
  std::int64_t at[kSeqs];
  for (int i = 0; i < kSeqs; ++i) at[i] = static_cast<std::int64_t>(prompts[i].size());
  for (int step = 0; step < 50; ++step) {
    ci.clear();
    gi.clear();
    for (int i = 0; i < kSeqs; ++i) {
      ci.push_back({&cpu[i], {&next[i], 1}, {&at[i], 1}, LogitsMode::Last});
      gi.push_back({&gpu[i], {&next[i], 1}, {&at[i], 1}, LogitsMode::Last});
    }
    cb.run(ci);
    gb.run(gi);
    for (int i = 0; i < kSeqs; ++i) {
      const auto lone = copy(alone[i].decode(next[i], at[i]));
      const std::string where = "sequence " + std::to_string(i) + " step " + std::to_string(step);
      ASSERT_EQ(copy(gb.logits(i)), lone) << where;
      ASSERT_GE(cosine(gb.logits(i), cb.logits(i)), 0.9999) << where;
      ASSERT_EQ(argmax(gb.logits(i)), argmax(cb.logits(i))) << where;
      next[i] = static_cast<std::int32_t>(argmax(cb.logits(i)));
      ++at[i];
    }
  }
}

// With the default tiled threshold (steps were tiled by their total rows before, so a batch
// of >= 8 one-row items ran another shader than a lone decode): the matmul picks its shader
// by each sequence's own rows, so nine decode items, a step mixing a long prompt chunk, short
// chunks and decode rows, and nine deferred heads in one pass all give the bits of the same
// rows run by lone device sessions.
TEST(VulkanBatch, RowsEqualLoneSessionsAtEveryBatchSizeWithTheDefaultTiledThreshold) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  Switches sw(dev.get());
  ASSERT_NE(sw.vk, nullptr);
  if (!sw.tiled_from(vulkan::VulkanDevice::kTiledMinRows))  // the default, whatever the environment says
    GTEST_SKIP() << "the device has too little shared memory for the tiled matmul";
  const Pair m = models(dev);
  const int V = m.cpu->config().vocab_size;
  // Prompt lengths on both sides of the threshold (8): their first chunks share one step.
  const int lengths[] = {12, 3, 9, 1, 20, 5, 8, 7, 2};
  constexpr int kSeqs = 9;
  std::vector<std::vector<std::int32_t>> prompts;
  std::vector<std::vector<std::int64_t>> pos;
  std::vector<Session> gpu, alone;
  for (int i = 0; i < kSeqs; ++i) {
    prompts.push_back(random_ids(lengths[i], V, 20 + i));
    pos.push_back(iota(0, lengths[i]));
    gpu.emplace_back(m.gpu);
    alone.emplace_back(m.gpu);
  }
  model::BatchForward gb(m.gpu, {.max_rows = 128, .max_items = 12});
  std::vector<BatchItem> gi;
  for (int i = 0; i < kSeqs; ++i) gi.push_back({&gpu[i], prompts[i], pos[i], LogitsMode::Last});
  gb.run(gi);
  // Each part lists the rows whose bits differ (the lone session's tokens go on either way).
  std::string differ;
  auto same = [&](std::span<const float> batched, std::span<const float> lone, const std::string& what) {
    if (!std::equal(batched.begin(), batched.end(), lone.begin(), lone.end())) differ += " [" + what + "]";
  };
  std::int32_t next[kSeqs];
  std::int64_t at[kSeqs];
  for (int i = 0; i < kSeqs; ++i) {
    const auto lone = copy(alone[i].prefill(prompts[i], pos[i], LogitsMode::Last));
    same(gb.logits(i), lone, "prompt of " + std::to_string(lengths[i]) + " rows");
    next[i] = static_cast<std::int32_t>(argmax(lone));
    at[i] = lengths[i];
  }
  EXPECT_EQ(differ, "") << "a step of nine prompts differs from each prompt alone";
  differ.clear();
  // Nine one-row decode items per step.
  for (int step = 0; step < 6; ++step) {
    gi.clear();
    for (int i = 0; i < kSeqs; ++i) gi.push_back({&gpu[i], {&next[i], 1}, {&at[i], 1}, LogitsMode::Last});
    gb.run(gi);
    for (int i = 0; i < kSeqs; ++i) {
      const auto lone = copy(alone[i].decode(next[i], at[i]));
      same(gb.logits(i), lone, "sequence " + std::to_string(i) + " step " + std::to_string(step));
      next[i] = static_cast<std::int32_t>(argmax(lone));
      ++at[i];
    }
  }
  EXPECT_EQ(differ, "") << "nine decode items differ from each decoding alone";
  differ.clear();
  // A mixed step: eight decode rows, a 40-row prompt chunk and a 5-row chunk.
  Session late_long(m.gpu), late_short(m.gpu), alone_long(m.gpu), alone_short(m.gpu);
  const auto long_ids = random_ids(40, V, 40), short_ids = random_ids(5, V, 41);
  const auto long_pos = iota(0, 40), short_pos = iota(0, 5);
  gi.clear();
  for (int i = 0; i < 8; ++i) gi.push_back({&gpu[i], {&next[i], 1}, {&at[i], 1}, LogitsMode::Last});
  gi.push_back({&late_long, long_ids, long_pos, LogitsMode::Last});
  gi.push_back({&late_short, short_ids, short_pos, LogitsMode::Last});
  gb.run(gi);
  for (int i = 0; i < 8; ++i) {
    const auto lone = copy(alone[i].decode(next[i], at[i]));
    same(gb.logits(i), lone, "decode row " + std::to_string(i));
    next[i] = static_cast<std::int32_t>(argmax(lone));
    ++at[i];
  }
  same(gb.logits(8), copy(alone_long.prefill(long_ids, long_pos, LogitsMode::Last)), "40-row chunk");
  same(gb.logits(9), copy(alone_short.prefill(short_ids, short_pos, LogitsMode::Last)), "5-row chunk");
  EXPECT_EQ(differ, "") << "a mixed step differs from each row alone";
  differ.clear();
  // Nine deferred heads in one device pass, each as its session's own head.
  gi.clear();
  for (int i = 0; i < kSeqs; ++i) gi.push_back({&gpu[i], {&next[i], 1}, {&at[i], 1}, LogitsMode::Hidden});
  gb.run(gi);
  std::vector<Session*> hidden;
  for (int i = 0; i < kSeqs; ++i) {
    alone[i].decode_hidden(next[i], at[i]);
    hidden.push_back(&gpu[i]);
  }
  gb.head_logits(hidden);
  for (int i = 0; i < kSeqs; ++i) same(gb.head_row(i), copy(alone[i].head_logits()), "head " + std::to_string(i));
  EXPECT_EQ(differ, "") << "nine deferred heads in one pass differ from each session's own head";
}

TEST(VulkanBatch, SnapshotPrefixCopyAndKvExportImportGiveTheRecomputedLogits) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const Pair m = models(dev);
  const int V = m.cpu->config().vocab_size;
  const auto ids = random_ids(32, V, 4);
  Session src(m.gpu), copied(m.gpu), imported(m.gpu);
  src.prefill(ids, iota(0, 32), LogitsMode::None);
  kv::KvSnapshot snap;
  src.snapshot(snap);
  const auto want = copy(src.decode(9, 32));  // position 32 after the 32-token prefix

  copied.copy_prefix_from(src, 32);
  EXPECT_EQ(copy(copied.decode(9, 32)), want) << "prefix copied on the device";

  std::vector<std::uint8_t> rows(32 * src.kv_position_bytes());
  src.export_kv(0, 16, rows.data());
  src.export_kv(16, 16, rows.data() + 16 * src.kv_position_bytes());
  imported.import_kv(0, 16, rows.data());
  imported.import_kv(16, 16, rows.data() + 16 * src.kv_position_bytes());
  EXPECT_EQ(copy(imported.decode(9, 32)), want) << "KV rows exported and imported";

  // Run far past the ring (16 + 64 slots), then come back to the snapshot.
  const auto more = random_ids(120, V, 5);
  src.prefill(more, iota(33, 120), LogitsMode::None);
  EXPECT_THROW(src.truncate(32), Error);  // the ring no longer holds the window
  src.restore(snap);
  EXPECT_EQ(copy(src.decode(9, 32)), want) << "restored snapshot";
  // Exporting what the ring no longer holds is an error, not garbage.
  src.prefill(more, iota(33, 120), LogitsMode::None);
  EXPECT_THROW(src.export_kv(0, 16, rows.data()), Error);
}
