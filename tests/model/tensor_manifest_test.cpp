// The tensor manifest: the table's columns agree with one another and with the config, and
// the walkers built on it (bind_weights, plan_packed, for_each_matrix) see the same tensors.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "model/config.h"
#include "model/packed_format.h"
#include "model/tensor_manifest.h"
#include "model/testing/test_checkpoint.h"

using namespace ringlm;
using namespace ringlm::model;

namespace {

ModelConfig tiny_config(const std::string& preset = "tiny") {
  model::testing::TestCheckpointOptions o;
  o.preset = preset;
  return parse_model_config(model::testing::test_checkpoint_config_json(o), "tiny/config.json");
}

}  // namespace

TEST(TensorManifest, NamesAreUniqueAndMapBothWays) {
  std::set<std::string> names, ggufs;
  std::set<int> global_slots, layer_slots;
  for (const TensorEntry& e : global_tensor_entries()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    EXPECT_TRUE(ggufs.insert(e.gguf).second) << e.gguf;
    if (e.packed_slot >= 0) EXPECT_TRUE(global_slots.insert(e.packed_slot).second) << e.name;
    EXPECT_EQ(gemma4_gguf_name(e.name), e.gguf);
    EXPECT_EQ(gemma4_canonical_name(e.gguf), e.name);
  }
  for (const TensorEntry& e : layer_tensor_entries()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    EXPECT_TRUE(ggufs.insert(e.gguf).second) << e.gguf;
    EXPECT_TRUE(layer_slots.insert(e.packed_slot).second) << e.name;  // every layer tensor is packed
    const std::string n = std::string("layers.7.") + e.name, g = std::string("blk.7.") + e.gguf;
    EXPECT_EQ(gemma4_gguf_name(n), g);
    EXPECT_EQ(gemma4_canonical_name(g), n);
    if (e.gguf_alias) EXPECT_EQ(gemma4_canonical_name(std::string("blk.7.") + e.gguf_alias), n);
  }
  // Slots are dense: weights.rlpk's order has no gaps to misread.
  EXPECT_EQ(*layer_slots.rbegin(), static_cast<int>(layer_slots.size()) - 1);
  EXPECT_EQ(*global_slots.rbegin(), static_cast<int>(global_slots.size()) - 1);
  EXPECT_EQ(gemma4_canonical_name("rope_freqs.weight"), "rope_freqs.weight");
  EXPECT_EQ(gemma4_canonical_name("blk.1.attn_qq.weight"), std::nullopt);
  EXPECT_EQ(gemma4_gguf_name("layers.1.self_attn.qq_proj.weight"), std::nullopt);
}

TEST(TensorManifest, ShapesAndPresenceFollowTheConfig) {
  const ModelConfig c = tiny_config();
  std::map<std::string, ManifestTensor> by_name;
  for (const ManifestTensor& t : manifest_tensors(c)) by_name[t.name] = t;
  ASSERT_EQ(by_name.size(), global_tensor_entries().size() + layer_tensor_entries().size() * c.num_layers);
  const std::int64_t H = c.hidden_size;
  for (int l = 0; l < c.num_layers; ++l) {
    const LayerConfig& L = c.layers[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    EXPECT_EQ(by_name[p + "self_attn.q_proj.weight"].shape, (std::vector<std::int64_t>{c.num_heads * L.head_dim, H}));
    EXPECT_EQ(by_name[p + "self_attn.o_proj.weight"].shape, (std::vector<std::int64_t>{H, c.num_heads * L.head_dim}));
    EXPECT_EQ(by_name[p + "self_attn.k_proj.weight"].shape, (std::vector<std::int64_t>{L.n_kv_heads * L.head_dim, H}));
    EXPECT_EQ(by_name[p + "self_attn.k_proj.weight"].present, L.owns_kv) << l;
    EXPECT_EQ(by_name[p + "self_attn.k_norm.weight"].present, L.owns_kv) << l;
    EXPECT_TRUE(by_name[p + "self_attn.q_proj.weight"].present);
    EXPECT_EQ(by_name[p + "mlp.down_proj.weight"].shape, (std::vector<std::int64_t>{H, L.mlp_width}));
    EXPECT_EQ(by_name[p + "layer_scalar"].shape, (std::vector<std::int64_t>{1}));
  }
  // tiny: sliding and full layers differ in head_dim, shared layers in MLP width.
  EXPECT_NE(by_name["layers.0.self_attn.q_norm.weight"].shape, by_name["layers.2.self_attn.q_norm.weight"].shape);
  EXPECT_EQ(by_name["layers.9.mlp.up_proj.weight"].shape[0], 2 * by_name["layers.0.mlp.up_proj.weight"].shape[0]);
  EXPECT_FALSE(by_name["lm_head.weight"].present);  // tied
  EXPECT_EQ(by_name["embed_tokens_per_layer.weight"].shape,
            (std::vector<std::int64_t>{c.ple_vocab_size, static_cast<std::int64_t>(c.num_layers) * c.ple_dim}));
}

TEST(TensorManifest, MatrixWalkerAndPackedPlanCoverTheTable) {
  const ModelConfig c = tiny_config();
  ModelWeights w;
  w.layers.resize(c.num_layers);
  std::size_t all = 0, linear = 0;
  for_each_matrix(w, MatrixSet::all, [&](WeightMatrix&) { ++all; });
  for_each_matrix(w, MatrixSet::linear, [&](WeightMatrix&) { ++linear; });
  EXPECT_EQ(linear, 9u * c.num_layers + 2);  // + per-layer model projection and LM head
  EXPECT_EQ(all, linear + 2);                // + the two embedding tables
  // Every member a tensor binds to is distinct.
  std::set<const void*> members;
  for (const ManifestTensor& t : manifest_tensors(c)) {
    const void* p = matrix_of(w, t) ? static_cast<const void*>(matrix_of(w, t))
                    : vector_of(w, t) ? static_cast<const void*>(vector_of(w, t))
                                      : static_cast<const void*>(scalar_of(w, t));
    ASSERT_NE(p, nullptr) << t.name;
    EXPECT_TRUE(members.insert(p).second) << t.name;
  }
  // weights.rlpk holds every present tensor except the two embedding tables, plus the head.
  std::size_t expected = 0;
  for (const ManifestTensor& t : manifest_tensors(c))
    expected += t.entry->packed_slot >= 0 && (t.present || t.entry->presence == Presence::head);
  const PackedPlan plan = plan_packed(c);
  std::size_t factors = 0;  // each q4p16 matrix is followed by its row factors
  for (const PackedTensor& t : plan.tensors) factors += t.row_factors;
  EXPECT_EQ(plan.tensors.size() - factors, expected);
  EXPECT_EQ(plan.tensors.front().name, "layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(plan.tensors.back().name, "per_layer_projection_norm.weight");
  EXPECT_EQ(tensor_name(&ModelWeights::embed_tokens), std::string("embed_tokens.weight"));
}
