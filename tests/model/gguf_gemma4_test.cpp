// gemma4 GGUF files: llama.cpp tensor names <-> canonical names (model/tensor_manifest.h),
// ggml {in, out} shapes -> PyTorch [out, in] (io/gguf_gemma4.h), and the text config
// derived from gemma4.* metadata. Here, not in tests/io, because the names are the model's.
#include <gtest/gtest.h>

#include <random>

#include "io/gguf_gemma4.h"
#include "io/gguf_writer.h"
#include "kernels/dequant_ggml.h"
#include "model/tensor_manifest.h"
#include "util/error.h"

using namespace ringlm;
using namespace ringlm::io;
using ringlm::model::gemma4_canonical_name;
using ringlm::model::gemma4_gguf_name;
using nlohmann::json;

namespace {

json tiny_config() {
  return json{
      {"model_type", "gemma4_text"},
      {"vocab_size", 300},
      {"hidden_size", 64},
      {"num_hidden_layers", 5},
      {"num_attention_heads", 2},
      {"num_key_value_heads", 1},
      {"head_dim", 32},
      {"global_head_dim", 64},
      {"intermediate_size", 128},
      {"use_double_wide_mlp", true},
      {"num_kv_shared_layers", 2},
      {"layer_types", {"sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "full_attention"}},
      {"sliding_window", 16},
      {"max_position_embeddings", 4096},
      {"rms_norm_eps", 1e-6},
      {"final_logit_softcapping", 30.0},
      {"hidden_size_per_layer_input", 16},
      {"rope_parameters",
       {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
        {"full_attention", {{"rope_type", "proportional"}, {"rope_theta", 1000000.0}, {"partial_rotary_factor", 0.25}}}}},
  };
}

struct Spec {
  std::string name;                  // canonical
  std::vector<std::int64_t> shape;   // PyTorch order
};

// The tensors of the tiny model, as a Hugging Face checkpoint names and shapes them.
std::vector<Spec> tiny_tensors(const json& c) {
  const std::int64_t H = c["hidden_size"], V = c["vocab_size"], L = c["num_hidden_layers"];
  const std::int64_t P = c["hidden_size_per_layer_input"], F = c["intermediate_size"];
  const std::int64_t shared = c["num_kv_shared_layers"];
  std::vector<Spec> s = {{"embed_tokens.weight", {V, H}},
                         {"embed_tokens_per_layer.weight", {V, L * P}},
                         {"per_layer_model_projection.weight", {L * P, H}},
                         {"per_layer_projection_norm.weight", {P}},
                         {"norm.weight", {H}}};
  for (std::int64_t l = 0; l < L; ++l) {
    const bool full = c["layer_types"][l] == "full_attention";
    const std::int64_t d = full ? c["global_head_dim"].get<std::int64_t>() : c["head_dim"].get<std::int64_t>();
    const std::int64_t f = l >= L - shared ? 2 * F : F;
    const std::string p = "layers." + std::to_string(l) + ".";
    s.push_back({p + "input_layernorm.weight", {H}});
    s.push_back({p + "self_attn.q_proj.weight", {2 * d, H}});
    if (l < L - shared) {  // KV-shared layers carry no K/V weights
      s.push_back({p + "self_attn.k_proj.weight", {d, H}});
      s.push_back({p + "self_attn.v_proj.weight", {d, H}});
      s.push_back({p + "self_attn.k_norm.weight", {d}});
    }
    s.push_back({p + "self_attn.q_norm.weight", {d}});
    s.push_back({p + "self_attn.o_proj.weight", {H, 2 * d}});
    s.push_back({p + "post_attention_layernorm.weight", {H}});
    s.push_back({p + "pre_feedforward_layernorm.weight", {H}});
    s.push_back({p + "mlp.gate_proj.weight", {f, H}});
    s.push_back({p + "mlp.up_proj.weight", {f, H}});
    s.push_back({p + "mlp.down_proj.weight", {H, f}});
    s.push_back({p + "post_feedforward_layernorm.weight", {H}});
    s.push_back({p + "per_layer_input_gate.weight", {P, H}});
    s.push_back({p + "per_layer_projection.weight", {H, P}});
    s.push_back({p + "post_per_layer_input_norm.weight", {H}});
    s.push_back({p + "layer_scalar", {1}});
  }
  return s;
}

std::int64_t numel(const std::vector<std::int64_t>& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

// Writes the tiny model as llama.cpp would: 1-D tensors F32, matrices in `matrix_type`.
std::vector<std::uint8_t> tiny_gguf(const json& c, DType matrix_type, std::vector<std::vector<std::uint8_t>>* data_out) {
  GgufWriter w;
  gemma4_write_metadata(w, c);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (const auto& spec : tiny_tensors(c)) {
    const DType t = spec.shape.size() == 1 ? DType::F32 : matrix_type;
    std::vector<float> x(static_cast<std::size_t>(numel(spec.shape)));
    for (auto& v : x) v = normal(rng);
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(kernels::row_bytes(t, numel(spec.shape))));
    kernels::quantize_row(t, x.data(), bytes.data(), numel(spec.shape));
    std::vector<std::int64_t> ne(spec.shape.rbegin(), spec.shape.rend());
    w.add_tensor(*gemma4_gguf_name(spec.name), ggml_type_of(t), ne, bytes);
    if (data_out) data_out->push_back(bytes);
  }
  const auto ff = gemma4_rope_freqs(c);
  w.add_tensor("rope_freqs.weight", 0, {static_cast<std::int64_t>(ff.size())},
               {reinterpret_cast<const std::uint8_t*>(ff.data()), ff.size() * 4});
  return w.bytes();
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(GgufGemma4, NamesMapBothWays) {
  EXPECT_EQ(gemma4_canonical_name("token_embd.weight"), "embed_tokens.weight");
  EXPECT_EQ(gemma4_canonical_name("blk.12.attn_q.weight"), "layers.12.self_attn.q_proj.weight");
  EXPECT_EQ(gemma4_canonical_name("blk.3.ffn_norm.weight"), "layers.3.pre_feedforward_layernorm.weight");
  EXPECT_EQ(gemma4_canonical_name("blk.34.layer_output_scale.weight"), "layers.34.layer_scalar");
  EXPECT_EQ(gemma4_canonical_name("blk.0.inp_gate.weight"), "layers.0.per_layer_input_gate.weight");
  EXPECT_EQ(gemma4_canonical_name("blk.0.proj.weight"), "layers.0.per_layer_projection.weight");
  EXPECT_EQ(gemma4_canonical_name("blk.0.post_norm.weight"), "layers.0.post_per_layer_input_norm.weight");
  EXPECT_EQ(gemma4_canonical_name("blk.01.attn_q.weight"), std::nullopt);
  EXPECT_EQ(gemma4_canonical_name("blk.x.attn_q.weight"), std::nullopt);
  EXPECT_EQ(gemma4_canonical_name("blk.1.attn_qq.weight"), std::nullopt);
  EXPECT_EQ(gemma4_canonical_name("v.blk.0.attn_q.weight"), std::nullopt);
  for (const auto& spec : tiny_tensors(tiny_config())) {
    const auto g = gemma4_gguf_name(spec.name);
    ASSERT_TRUE(g) << spec.name;
    EXPECT_EQ(gemma4_canonical_name(*g), spec.name);
  }
}

TEST(GgufGemma4, TensorSourceGivesCanonicalNamesAndPyTorchShapes) {
  const json c = tiny_config();
  std::vector<std::vector<std::uint8_t>> data;
  const auto bytes = tiny_gguf(c, DType::BF16, &data);
  auto file = std::shared_ptr<GgufFile>(GgufFile::from_memory(bytes.data(), bytes.size(), "tiny.gguf"));
  GgufTensorSource src(file, gemma4_canonical_name);
  const auto specs = tiny_tensors(c);
  EXPECT_EQ(src.names().size(), specs.size() + 1);  // + rope_freqs.weight
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const TensorView* v = src.find(specs[k].name);
    ASSERT_NE(v, nullptr) << specs[k].name;
    EXPECT_EQ(v->shape, specs[k].shape) << specs[k].name;
    EXPECT_EQ(v->dtype, specs[k].shape.size() == 1 ? DType::F32 : DType::BF16);
    ASSERT_EQ(v->nbytes, data[k].size());
    EXPECT_EQ(std::memcmp(v->data, data[k].data(), data[k].size()), 0) << specs[k].name;
    EXPECT_EQ(v->file, "tiny.gguf");
  }
  EXPECT_EQ(src.find("layers.4.self_attn.k_proj.weight"), nullptr);  // shared layer
  EXPECT_TRUE(src.unmapped().empty());
}

TEST(GgufGemma4, ConfigRoundTripsThroughMetadata) {
  const json c = tiny_config();
  const auto bytes = tiny_gguf(c, DType::F32, nullptr);
  auto file = GgufFile::from_memory(bytes.data(), bytes.size(), "tiny.gguf");
  const json d = gemma4_text_config(*file);
  for (const char* key : {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                          "num_key_value_heads", "head_dim", "global_head_dim", "intermediate_size",
                          "use_double_wide_mlp", "num_kv_shared_layers", "layer_types", "sliding_window",
                          "max_position_embeddings", "hidden_size_per_layer_input", "final_logit_softcapping"})
    EXPECT_EQ(d[key], c[key]) << key;
  EXPECT_EQ(d["rms_norm_eps"].get<double>(), 1e-6);  // the f32 in the file, read as written
  EXPECT_EQ(d["vocab_size_per_layer_input"], 300);
  EXPECT_EQ(d["tie_word_embeddings"], true);
  EXPECT_EQ(d["rope_parameters"]["full_attention"]["partial_rotary_factor"], 0.25);
  EXPECT_EQ(d["rope_parameters"]["full_attention"]["rope_theta"], 1000000.0);
  EXPECT_EQ(d["rope_parameters"]["sliding_attention"]["rope_theta"], 10000.0);
}

TEST(GgufGemma4, QuantizedTypesAreExposed) {
  json c = tiny_config();
  c["hidden_size"] = 256;  // K-quant rows need 256 values
  c["hidden_size_per_layer_input"] = 256;
  c["head_dim"] = 256;
  c["global_head_dim"] = 512;
  c["intermediate_size"] = 256;
  c["vocab_size"] = 8;
  c["num_hidden_layers"] = 2;  // keep it cheap (sanitizer builds): one owning, one shared layer
  c["num_kv_shared_layers"] = 1;
  c["layer_types"] = {"sliding_attention", "full_attention"};
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const auto bytes = tiny_gguf(c, t, nullptr);
    auto file = std::shared_ptr<GgufFile>(GgufFile::from_memory(bytes.data(), bytes.size(), "q.gguf"));
    GgufTensorSource src(file, gemma4_canonical_name);
    const TensorView* v = src.find("layers.0.mlp.down_proj.weight");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->dtype, t);
    EXPECT_EQ(v->shape, (std::vector<std::int64_t>{256, 256}));
    EXPECT_EQ(static_cast<std::int64_t>(v->nbytes), kernels::row_bytes(t, 256) * 256);
  }
}

TEST(GgufGemma4, ClearErrors) {
  const json c = tiny_config();
  {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    const auto b = w.bytes();
    auto f = std::shared_ptr<GgufFile>(GgufFile::from_memory(b.data(), b.size(), "llama.gguf"));
    EXPECT_NE(error_of([&] { GgufTensorSource s(f, gemma4_canonical_name); }).find("'llama'"), std::string::npos);
    EXPECT_NE(error_of([&] { gemma4_text_config(*f); }).find("only 'gemma4'"), std::string::npos);
  }
  {
    GgufWriter w;
    w.add_string("general.architecture", "gemma4");
    // TQ2_0: a type ringlm cannot compute (Q2_K and then IQ2_XXS, tested here before, now run).
    w.add_tensor("blk.0.attn_q.weight", 35 /* TQ2_0 */, {256, 1}, std::vector<std::uint8_t>(66));
    const auto b = w.bytes();
    auto f = std::shared_ptr<GgufFile>(GgufFile::from_memory(b.data(), b.size(), "tq2.gguf"));
    const auto msg = error_of([&] { GgufTensorSource s(f, gemma4_canonical_name); });
    EXPECT_NE(msg.find("'blk.0.attn_q.weight' has type TQ2_0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("tq2.gguf"), std::string::npos) << msg;
  }
  {
    // Per-layer MLP widths that are not "one width, doubled on the KV-shared layers".
    GgufWriter w2;
    std::uint32_t widths[] = {128, 256, 128, 256, 256};
    w2.add_string("general.architecture", "gemma4");
    w2.add_u32("gemma4.block_count", 5);
    w2.add_u32("gemma4.embedding_length", 64);
    w2.add_array_u32("gemma4.feed_forward_length", widths);
    w2.add_u32("gemma4.attention.head_count", 2);
    w2.add_u32("gemma4.attention.head_count_kv", 1);
    w2.add_u32("gemma4.attention.shared_kv_layers", 2);
    const auto b = w2.bytes();
    auto f = GgufFile::from_memory(b.data(), b.size(), "ffn.gguf");
    const auto msg = error_of([&] { gemma4_text_config(*f); });
    EXPECT_NE(msg.find("feed_forward_length' gives layer 1 width 256"), std::string::npos) << msg;
  }
}
