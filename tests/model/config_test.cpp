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
