// decode_traffic(): the bytes one decode step reads, the numerator of `ringlm bench`'s
// decode floor. Checked against the checkpoint's own tensor sizes and against packed q4_0.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "model/decode_traffic.h"
#include "model/model.h"
#include "model/testing/test_checkpoint.h"

namespace fs = std::filesystem;
using namespace ringlm;

namespace {

std::shared_ptr<const model::Model> load_tiny(model::WeightFormat weights) {
  const fs::path dir = fs::temp_directory_path() / ("ringlm_traffic_test_" + std::to_string(::getpid()));
  model::testing::TestCheckpointOptions o;
  o.preset = "tiny";
  model::testing::write_test_checkpoint(dir, o);
  auto m = model::Model::load(dir, {.threads = 1, .weights = weights});
  fs::remove_all(dir);  // the mapping keeps the data alive
  return m;
}

}  // namespace

// Stored weights: every 2-D tensor of the checkpoint is one matmul per token, except the
// per-layer-embedding table, which is only gathered (the tied embedding is the LM head).
TEST(DecodeTraffic, StoredWeightsEqualCheckpointMatrices) {
  auto m = load_tiny(model::WeightFormat::stored);
  std::uint64_t expect = 0;
  for (const auto& name : m->source().names()) {
    const io::TensorView* t = m->source().find(name);
    if (t->shape.size() == 2 && name != "embed_tokens_per_layer.weight") expect += t->nbytes;
  }
  const auto traffic = model::decode_traffic(m->config(), m->weights(), 1);
  EXPECT_EQ(traffic.weight_bytes, expect);
  EXPECT_GT(traffic.weight_bytes, 0u);
}

// KV traffic grows with the context on full layers only once the sliding window is full.
TEST(DecodeTraffic, KvGrowsOnlyOnFullLayersPastTheWindow) {
  auto m = load_tiny(model::WeightFormat::stored);
  const auto& c = m->config();
  std::uint64_t full_row = 0, all_row = 0;
  for (const auto& l : c.layers) {
    const std::uint64_t row = static_cast<std::uint64_t>(l.n_kv_heads) * l.head_dim * 2 * sizeof(float);
    all_row += row;
    if (l.kind == model::AttentionKind::Full) full_row += row;
  }
  const std::int64_t w = c.sliding_window;
  EXPECT_EQ(model::decode_traffic(c, m->weights(), 5).kv_bytes, 5 * all_row);
  EXPECT_EQ(model::decode_traffic(c, m->weights(), w + 100).kv_bytes -
                model::decode_traffic(c, m->weights(), w).kv_bytes,
            100 * full_row);
}

// Packed q4_0 reads 18 bytes per 32 weights, over rows padded to groups of 16.
TEST(DecodeTraffic, PackedQ4CountsPaddedGroups) {
  auto m = load_tiny(model::WeightFormat::q4_0);
  const auto& w = m->weights().layers.at(0).q_proj;
  if (!w.packed) GTEST_SKIP() << "tiny q_proj width is not a multiple of 32";
  const std::uint64_t groups = (static_cast<std::uint64_t>(w.rows) + 15) / 16;
  EXPECT_EQ(model::matrix_bytes(w), groups * 16 * static_cast<std::uint64_t>(w.cols) / 32 * 18);
}
