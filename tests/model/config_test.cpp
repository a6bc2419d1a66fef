#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/config.h"
#include "util/error.h"

using namespace ringlm::model;
using json = nlohmann::json;

namespace {

// E4B as transformers' convert_gemma4_weights.py defines it (5 sliding : 1 full, 2 KV heads).
json e4b_text() {
  json t;
  t["hidden_size"] = 2560;
  t["intermediate_size"] = 10240;
  t["num_hidden_layers"] = 42;
  t["num_attention_heads"] = 8;
  t["num_key_value_heads"] = 2;
  t["num_kv_shared_layers"] = 18;
  t["hidden_size_per_layer_input"] = 256;
  t["final_logit_softcapping"] = 30.0;
  json types = json::array();
  for (int r = 0; r < 7; ++r) {
    for (int i = 0; i < 5; ++i) types.push_back("sliding_attention");
    types.push_back("full_attention");
  }
  t["layer_types"] = types;
  t["rope_parameters"] = {
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
      {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1e6}}}};
  return t;
}

std::string error_of(const std::string& text) {
  try {
    parse_model_config(text, "x/config.json");
  } catch (const ringlm::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Config, E4BNestedResolvesLayersFromTheConfig) {
  json doc = {{"text_config", e4b_text()}, {"eos_token_id", {1, 106}}};
  ModelConfig c = parse_model_config(doc.dump(), "config.json");
  EXPECT_EQ(c.num_layers, 42);
  EXPECT_EQ(c.first_shared_layer(), 24);
  EXPECT_EQ(c.head_dim, 256);          // HF default
  EXPECT_EQ(c.global_head_dim, 512);   // HF default
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{1, 106}));
  // Owning layers 0-23: last sliding is 22, last full is 23.
  for (int l = 24; l < 42; ++l) {
    const auto& L = c.layers[l];
    EXPECT_FALSE(L.owns_kv);
    EXPECT_EQ(L.kv_source_layer, L.kind == AttentionKind::Sliding ? 22 : 23) << l;
    EXPECT_EQ(L.mlp_width, 10240);  // use_double_wide_mlp defaults to false
    EXPECT_EQ(L.n_kv_heads, 2);
  }
  EXPECT_EQ(c.layers[5].head_dim, 512);
  EXPECT_EQ(c.layers[5].rope, &c.rope_full);
  // Proportional RoPE: 64 of 256 pairs rotate, exponent over the full 512.
  ASSERT_EQ(c.rope_full.inv_freq.size(), 256u);
  EXPECT_DOUBLE_EQ(c.rope_full.inv_freq[1], std::pow(1e6, -2.0 / 512));
  EXPECT_GT(c.rope_full.inv_freq[63], 0.0);
  EXPECT_EQ(c.rope_full.inv_freq[64], 0.0);
  EXPECT_DOUBLE_EQ(c.rope_sliding.inv_freq[127], std::pow(1e4, -254.0 / 256));
  ModelConfig copy = c;
  EXPECT_EQ(copy.layers[5].rope, &copy.rope_full);
}

TEST(Config, FlatLayoutAndDoubleWideMlp) {
  json t = e4b_text();
  t["use_double_wide_mlp"] = true;
  ModelConfig c = parse_model_config(t.dump(), "config.json");
  EXPECT_EQ(c.layers[23].mlp_width, 10240);
  EXPECT_EQ(c.layers[24].mlp_width, 20480);
}

TEST(Config, ErrorsNameTheFileAndField) {
  json t = e4b_text();
  t.erase("hidden_size");
  EXPECT_NE(error_of(json{{"text_config", t}}.dump()).find("x/config.json: field text_config.hidden_size: missing"),
            std::string::npos);
  t = e4b_text();
  t["num_key_value_heads"] = 3;
  EXPECT_NE(error_of(t.dump()).find("num_key_value_heads"), std::string::npos);
  t = e4b_text();
  t["layer_types"].erase(0);
  EXPECT_NE(error_of(t.dump()).find("layer_types"), std::string::npos);
  t = e4b_text();
  t["rope_parameters"]["full_attention"]["rope_type"] = "yarn";
  EXPECT_NE(error_of(t.dump()).find("rope_parameters.full_attention.rope_type"), std::string::npos);
  t = e4b_text();
  t["num_kv_shared_layers"] = 41;  // only layer 0 (sliding) owns KV: full shared layers have no source
  EXPECT_NE(error_of(t.dump()).find("num_kv_shared_layers"), std::string::npos);
  t = e4b_text();
  t["hidden_size"] = "big";
  EXPECT_NE(error_of(t.dump()).find("hidden_size"), std::string::npos);
  EXPECT_NE(error_of("[1,2]").find("x/config.json"), std::string::npos);
}

#include "model/testing/test_checkpoint.h"

namespace {
ModelConfig preset_config(const std::string& preset) {
  ringlm::model::testing::TestCheckpointOptions o;
  o.preset = preset;
  return parse_model_config(ringlm::model::testing::test_checkpoint_config_json(o), "config.json");
}
}  // namespace

// The per-layer map of gemma4-e2b-spec.md section 2, derived from the config alone.
TEST(Config, E2BPresetMatchesTheSpecLayerMap) {
  ModelConfig c = preset_config("e2b");
  EXPECT_EQ(c.hidden_size, 1536);
  EXPECT_EQ(c.num_layers, 35);
  EXPECT_EQ(c.first_shared_layer(), 15);
  EXPECT_EQ(c.num_layers * c.ple_dim, 8960);
  for (int l = 0; l < 35; ++l) {
    const LayerConfig& L = c.layers[l];
    const bool full = l % 5 == 4;
    EXPECT_EQ(L.kind, full ? AttentionKind::Full : AttentionKind::Sliding) << l;
    EXPECT_EQ(L.head_dim, full ? 512 : 256) << l;
    EXPECT_EQ(c.num_heads * L.head_dim, full ? 4096 : 2048) << l;
    EXPECT_EQ(L.n_kv_heads, 1);
    EXPECT_EQ(L.owns_kv, l < 15) << l;
    EXPECT_EQ(L.kv_source_layer, l < 15 ? l : (full ? 14 : 13)) << l;
    EXPECT_EQ(L.mlp_width, l < 15 ? 6144 : 12288) << l;
  }
  int rotated = 0;
  for (double f : c.rope_full.inv_freq) rotated += f > 0;
  EXPECT_EQ(rotated, 64);
  EXPECT_EQ(c.final_logit_softcapping, 30.0);
}

TEST(Config, E4BAndTinyPresets) {
  ModelConfig e4b = preset_config("e4b");
  EXPECT_EQ(e4b.hidden_size, 2560);
  EXPECT_EQ(e4b.num_kv_heads, 2);
  EXPECT_EQ(e4b.first_shared_layer(), 24);
  EXPECT_EQ(e4b.layers[41].kind, AttentionKind::Full);
  EXPECT_EQ(e4b.layers[41].mlp_width, 10240);
  ModelConfig tiny = preset_config("tiny");
  // Both kinds own at least two layers and are shared, so "last owning layer of its kind"
  // is not simply the last owning layer.
  EXPECT_EQ(tiny.layers[5].kv_source_layer, 3);
  EXPECT_EQ(tiny.layers[6].kv_source_layer, 4);
  EXPECT_EQ(tiny.layers[9].kv_source_layer, 4);
  EXPECT_EQ(tiny.sliding_window, 16);
  EXPECT_EQ(tiny.layers[9].mlp_width, 2 * tiny.intermediate_size);
  EXPECT_EQ(preset_config("tiny-gqa").num_kv_heads, 2);
}
