// Speculative decoding's two device pieces (tiny model, default tiled threshold):
// - a verify item (k + 1 logits rows, BatchItem::row_chunk) gives each row the bits of the
//   same token run as a lone one-token step, also when the item has >= 8 rows (whose matmul
//   would run tiled as one group), with the final-normed rows kept for a drafter;
// - Session::mirror_kv keeps host copies of the device's KV that equal a session that ran
//   only the accepted tokens, through verify steps, rejected drafts (truncate) and ring wraps,
//   reading back only what changed.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "device_fixture.h"
#include "model/batch_forward.h"
#include "model/model.h"
#include "tiny_checkpoint.h"
#include "vulkan/vulkan_device.h"

using namespace ringlm;
using namespace ringlm::vulkan::testing;
using model::BatchItem;
using model::LogitsMode;
using model::Session;

namespace {

std::vector<float> copy(std::span<const float> v) { return {v.begin(), v.end()}; }

// Every layer's view of a and b: the slots both hold are the same position with the same
// halves; a slot only one holds is a ring slot whose old row a's rejected drafts overwrote
// (then emptied), far behind `next`.
void expect_same_kv(const Session& a, const Session& b, int layers, std::int64_t next, const std::string& where) {
  for (int l = 0; l < layers; ++l) {
    const kernels::KvSlots x = a.kv_view(l), y = b.kv_view(l);
    ASSERT_EQ(x.n_slots, y.n_slots) << where << " layer " << l;
    ASSERT_EQ(x.type, kernels::KvType::f16);
    const std::size_t row = static_cast<std::size_t>(x.n_kv_heads) * x.head_dim;
    int compared = 0;
    for (int s = 0; s < x.n_slots; ++s) {
      if (x.pos[s] != y.pos[s]) {
        ASSERT_EQ(x.pos[s], -1) << where << " layer " << l << " slot " << s;
        ASSERT_LT(y.pos[s], next - Session::kMaxChunk) << where << " layer " << l << " slot " << s;
        continue;
      }
      if (x.pos[s] < 0) continue;
      ASSERT_EQ(std::memcmp(x.k16 + s * row, y.k16 + s * row, 2 * row), 0) << where << " K layer " << l << " slot " << s;
      ASSERT_EQ(std::memcmp(x.v16 + s * row, y.v16 + s * row, 2 * row), 0) << where << " V layer " << l << " slot " << s;
      ++compared;
    }
    EXPECT_GT(compared, 0) << where << " layer " << l;
  }
}

}  // namespace

TEST(VulkanDraft, VerifyRowsAreLoneStepsAndTheKvMirrorFollowsTheDevice) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  Switches sw(dev.get());
  ASSERT_NE(sw.vk, nullptr);
  sw.tiled_from(vulkan::VulkanDevice::kTiledMinRows);  // the default, whatever the environment says
  const auto m = load_tiny(13, dev);
  const int V = m->config().vocab_size, H = m->config().hidden_size, L = m->config().num_layers;
  std::mt19937 rng(5);
  auto token = [&] { return static_cast<std::int32_t>(rng() % static_cast<unsigned>(V)); };

  constexpr int kMaxDraft = 8;  // 9 rows: one group of them would run tiled
  model::BatchForward batch(m, {.max_rows = 64, .max_items = 2, .max_logits_rows = kMaxDraft + 2,
                                .keep_hidden_rows = true});
  Session spec(m), plain(m);
  std::vector<std::int32_t> prompt(20);
  for (auto& t : prompt) t = token();
  std::vector<std::int64_t> pos(prompt.size());
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int64_t>(i);
  const BatchItem first{&spec, prompt, pos, LogitsMode::Last};
  batch.run(std::span<const BatchItem>(&first, 1));
  const auto lone_prompt = copy(plain.prefill(prompt, pos, LogitsMode::Last));
  ASSERT_EQ(copy(batch.logits(0)), lone_prompt);
  std::vector<int> all(static_cast<std::size_t>(L));
  for (int l = 0; l < L; ++l) all[static_cast<std::size_t>(l)] = l;
  spec.mirror_kv(all);

  std::int64_t next = static_cast<std::int64_t>(prompt.size());
  std::int32_t pending = token();
  int verified = 0;
  // Rounds of k drafts (k = 1..8), a random number of them kept, until both rings wrapped
  // several times (the tiny model's rings: 80 slots).
  for (int round = 0; next < 150; ++round) {
    const int k = 1 + round % kMaxDraft;
    std::vector<std::int32_t> ids = {pending};
    for (int j = 0; j < k; ++j) ids.push_back(token());
    std::vector<std::int64_t> p(ids.size());
    for (std::size_t j = 0; j < p.size(); ++j) p[j] = next + static_cast<std::int64_t>(j);
    const std::vector<std::uint8_t> chunk(ids.size(), 0);  // every row a one-token step in plain decoding
    BatchItem item{&spec, ids, p, LogitsMode::Last};
    item.logits_rows = k + 1;
    item.row_chunk = chunk.data();
    batch.run(std::span<const BatchItem>(&item, 1));
    const int keep = static_cast<int>(rng() % static_cast<unsigned>(k + 1));  // drafts accepted
    for (int j = 0; j <= keep; ++j) {
      const auto lone = copy(plain.decode(ids[static_cast<std::size_t>(j)], p[static_cast<std::size_t>(j)]));
      const std::string where = "round " + std::to_string(round) + " row " + std::to_string(j) + " of " +
                                std::to_string(k + 1);
      ASSERT_EQ(copy(batch.logits(0, j)), lone) << where;
      ASSERT_EQ(copy(batch.hidden(0, j)), copy(plain.head_input())) << where;
      ++verified;
    }
    // The rejected drafts leave the cache; the row after the last kept one gives the next token.
    spec.truncate(next + keep + 1);
    next += keep + 1;
    pending = token();
    if (round % 3 == 0) spec.mirror_kv(all);  // also several rounds between copies
  }
  spec.mirror_kv(all);
  // Back below the copied positions (a slot reused for a prompt that shares only a prefix):
  // the rows run again there must be read again.
  next -= 10;
  spec.truncate(next);
  plain.truncate(next);
  for (int j = 0; j < 10; ++j, ++next) {
    const std::int32_t t = token();
    spec.decode(t, next);
    plain.decode(t, next);
  }
  spec.mirror_kv(all);
  plain.mirror_kv(all);  // plain's first copy: every held row read at once
  expect_same_kv(spec, plain, L, next, "after " + std::to_string(verified) + " verified rows");
  EXPECT_GT(verified, 60);
  EXPECT_EQ(H, static_cast<int>(plain.head_input().size()));
  // A cache changed after its copy is not silently read stale.
  plain.decode(token(), next);
  EXPECT_THROW(plain.kv_view(0), Error);
}
