// Steps recorded once per shape and replayed (VulkanDevice::end_step): a decode run through
// the sliding ring's wrap gives the same logits bit for bit with every step recorded afresh
// and with steps replayed, the decode steps are replays, and the kept recordings go with the
// buffers they bind. Decode memory is flat: the anonymous RSS after N and after 2N steps.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

#include "device_fixture.h"
#include "model/model.h"
#include "tiny_checkpoint.h"

namespace fs = std::filesystem;
using namespace ringlm;
using namespace ringlm::vulkan::testing;
using model::LogitsMode;
using model::Session;

namespace {

// Prefill of 20 tokens, then `steps` greedy decode steps; every logits row, in order.
std::vector<std::vector<float>> run(const std::shared_ptr<const model::Model>& m, int steps) {
  std::vector<std::int32_t> ids(20);
  std::mt19937 rng(3);
  for (auto& id : ids) id = static_cast<std::int32_t>(rng() % m->config().vocab_size);
  std::vector<std::int64_t> pos(20);
  for (int i = 0; i < 20; ++i) pos[i] = i;
  Session s(m);
  std::vector<std::vector<float>> out;
  const auto first = s.prefill(ids, pos);
  out.emplace_back(first.begin(), first.end());
  for (int p = 20; p < 20 + steps; ++p) {
    const auto& last = out.back();
    const auto next = static_cast<std::int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
    const auto l = s.decode(next, p);
    out.emplace_back(l.begin(), l.end());
  }
  return out;
}

std::int64_t anon_rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "RssAnon:") {
      std::int64_t kb = 0;
      f >> kb;
      return kb;
    }
    f.ignore(1 << 20, '\n');
  }
  return -1;
}

}  // namespace

TEST(VulkanReplay, ReplayedStepsGiveTheLogitsOfFreshlyRecordedOnes) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const auto m = load_tiny(9, dev);
  const int steps = 110;  // positions to 130: the ring (16-token window + 64) wraps
  dev->set_step_reuse(false);
  const backend::StepStats s0 = dev->step_stats();
  const auto fresh = run(m, steps);
  const backend::StepStats s1 = dev->step_stats();
  dev->set_step_reuse(true);
  const auto replayed = run(m, steps);
  const backend::StepStats s2 = dev->step_stats();
  EXPECT_EQ(s1.replayed, s0.replayed);
  EXPECT_EQ(s1.recorded - s0.recorded, s1.steps - s0.steps);
  // Every decode step after the first is a replay (the scan bound of the full caches grows
  // in a buffer, not in the recorded parameters).
  EXPECT_GE(s2.replayed - s1.replayed, static_cast<std::uint64_t>(steps - 1));
  EXPECT_LE(s2.recorded - s1.recorded, 3u);
  ASSERT_EQ(fresh.size(), replayed.size());
  for (std::size_t i = 0; i < fresh.size(); ++i)
    ASSERT_TRUE(fresh[i] == replayed[i]) << "step " << i << " differs between fresh and replayed";
  // The sessions are gone, and with their buffers every recording that bound them.
  EXPECT_EQ(dev->step_stats().kept, 0u);
}

TEST(VulkanReplay, DecodeMemoryIsFlat) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const auto m = load_tiny(9, dev);
  std::vector<std::int32_t> ids = {2, 10, 20, 30};
  Session s(m);
  s.prefill(ids, std::vector<std::int64_t>{0, 1, 2, 3});
  const int n = 128;
  std::int64_t rss[3] = {};
  for (int p = 4, k = 0; k < 2 * n; ++p, ++k) {
    if (k == 1) rss[0] = anon_rss_kb();
    s.decode(static_cast<std::int32_t>(5 + k % 50), p);
    if (k + 1 == n) rss[1] = anon_rss_kb();
    if (k + 1 == 2 * n) rss[2] = anon_rss_kb();
  }
  std::printf("anonymous RSS after 1, %d and %d decode steps: %lld, %lld, %lld kB\n", n, 2 * n,
              static_cast<long long>(rss[0]), static_cast<long long>(rss[1]), static_cast<long long>(rss[2]));
  ASSERT_GT(rss[0], 0);
  // Before the K/V buffers were zeroed at creation this grew ~0.5 kB a step on lavapipe.
  EXPECT_LE(rss[2] - rss[1], 16) << "anonymous RSS grew between step " << n << " and step " << 2 * n;
}
