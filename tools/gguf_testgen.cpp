// Test helper for tests/gguf/dequant_numpy_test.py.
//   gguf_testgen quantize OUT.gguf SEED : random floats (with outlier blocks and extreme
//       magnitudes) quantized to every supported type by ringlm's quantizers. Writes, per
//       type T, "src.T" (F32 input), "q.T" (the blocks) and "deq.T" (F32, ringlm's dequant).
//   gguf_testgen seed OUT.gguf : a tiny but complete gemma4 file (2 layers, tokenizer
//       metadata, F32/BF16/Q8_0 tensors) used as a fuzzer seed.
//   gguf_testgen dequant IN.gguf OUT.gguf : reads IN with ringlm's GGUF reader and writes
//       every tensor dequantized to F32 under the same name.
// The Python test decodes the blocks independently in float64 and compares.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "io/gguf_gemma4.h"
#include "io/gguf_reader.h"
#include "io/gguf_tokenizer.h"
#include "io/gguf_writer.h"
#include "kernels/dequant_ggml.h"
#include "model/tensor_manifest.h"
#include "util/error.h"

using namespace ringlm;

namespace {

std::span<const std::uint8_t> as_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * 4};
}

void quantize_file(const std::string& out, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::int64_t rows = 6, cols = 512;  // 2 super-blocks / 16 blocks per row
  // Per-row magnitude, from tiny (scales in fp16 subnormals) to large (with the outliers,
  // Q4_0/Q4_1 scales near the fp16 maximum).
  const float magnitudes[rows] = {1e-6f, 0.02f, 1.0f, 30.0f, 400.0f, 3000.0f};
  std::vector<float> src(rows * cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      float v = normal(rng) * magnitudes[r];
      if (c % 97 == 5) v *= 40.0f;               // outliers inside blocks
      if (r == 2 && c >= 64 && c < 96) v = 0.0f;  // an all-zero block
      if (r == 2 && c >= 256 && c < 288) v = std::abs(v) + 3.0f;  // an all-positive block
      src[r * cols + c] = v;
    }
  io::GgufWriter w;
  w.add_string("general.architecture", "ringlm-test");
  const io::DType types[] = {io::DType::F32, io::DType::F16, io::DType::BF16, io::DType::Q8_0,
                             io::DType::Q4_0, io::DType::Q4_1, io::DType::Q4_K, io::DType::Q5_K,
                             io::DType::Q6_K};
  for (auto t : types) {
    const std::string name = io::dtype_name(t);
    std::vector<float> in = src;
    // F16 values and the Q4_1 block minimum are fp16: keep those inputs inside its range.
    if (t == io::DType::F16 || t == io::DType::Q4_1)
      for (auto& v : in) v = std::max(-60000.0f, std::min(60000.0f, v));
    std::vector<std::uint8_t> blocks(static_cast<std::size_t>(kernels::row_bytes(t, cols) * rows));
    std::vector<float> deq(in.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      std::uint8_t* row = blocks.data() + r * kernels::row_bytes(t, cols);
      kernels::quantize_row(t, in.data() + r * cols, row, cols);
      kernels::dequantize_row(t, row, deq.data() + r * cols, cols);
    }
    w.add_tensor("src." + name, 0, {cols, rows}, as_bytes(in));
    w.add_tensor("q." + name, io::ggml_type_of(t), {cols, rows}, blocks);
    w.add_tensor("deq." + name, 0, {cols, rows}, as_bytes(deq));
  }
  w.write(out);
}

void dequant_file(const std::string& in, const std::string& out) {
  const io::GgufFile f(in);
  io::GgufWriter w;
  for (const auto& t : f.tensors()) {
    if (!t.type_info().dtype) fail(in, ": tensor '", t.name, "' has unsupported type ", t.type_info().name);
    std::vector<float> deq(static_cast<std::size_t>(t.numel()));
    kernels::dequantize_row(*t.type_info().dtype, t.data, deq.data(), t.numel());
    w.add_tensor(t.name, 0, t.ne, as_bytes(deq));
  }
  w.write(out);
}

void seed_file(const std::string& out) {
  const nlohmann::json c = {
      {"hidden_size", 32}, {"num_hidden_layers", 2}, {"num_attention_heads", 2},
      {"num_key_value_heads", 1}, {"head_dim", 32}, {"global_head_dim", 64},
      {"intermediate_size", 32}, {"use_double_wide_mlp", true}, {"num_kv_shared_layers", 1},
      {"layer_types", {"sliding_attention", "full_attention"}}, {"sliding_window", 8},
      {"hidden_size_per_layer_input", 32}, {"final_logit_softcapping", 30.0},
      {"rope_parameters", {{"full_attention", {{"rope_theta", 1e6}, {"partial_rotary_factor", 0.25}}}}}};
  io::GgufWriter w;
  io::gemma4_write_metadata(w, c);
  io::GgufTokenizerData tok;
  tok.model = "gemma4";
  tok.tokens = {"<pad>", "<eos>", "<bos>", "<unk>", "a", "b", "ab", "\xe2\x96\x81"};
  tok.scores.assign(tok.tokens.size(), 0.0f);
  tok.token_types = {3, 3, 3, 2, 1, 1, 1, 1};
  tok.merges = {"a b"};
  tok.bos_id = 2;
  tok.eos_id = 1;
  tok.add_bos = true;
  tok.chat_template = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}";
  io::gguf_write_tokenizer(w, tok);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  auto add = [&](const std::string& canonical, std::vector<std::int64_t> shape, io::DType t) {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    std::vector<float> x(static_cast<std::size_t>(n));
    for (auto& v : x) v = normal(rng);
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(kernels::row_bytes(t, n)));
    kernels::quantize_row(t, x.data(), bytes.data(), n);
    w.add_tensor(*model::gemma4_gguf_name(canonical), io::ggml_type_of(t),
                 std::vector<std::int64_t>(shape.rbegin(), shape.rend()), bytes);
  };
  add("embed_tokens.weight", {8, 32}, io::DType::Q8_0);
  add("embed_tokens_per_layer.weight", {8, 64}, io::DType::BF16);
  add("per_layer_model_projection.weight", {64, 32}, io::DType::Q8_0);
  add("per_layer_projection_norm.weight", {32}, io::DType::F32);
  add("norm.weight", {32}, io::DType::F32);
  add("layers.0.self_attn.q_proj.weight", {64, 32}, io::DType::Q8_0);
  add("layers.0.self_attn.k_proj.weight", {32, 32}, io::DType::F16);
  add("layers.1.mlp.down_proj.weight", {32, 64}, io::DType::Q4_0);
  add("layers.1.layer_scalar", {1}, io::DType::F32);
  const auto ff = io::gemma4_rope_freqs(c);
  w.add_tensor("rope_freqs.weight", 0, {static_cast<std::int64_t>(ff.size())},
               {reinterpret_cast<const std::uint8_t*>(ff.data()), ff.size() * 4});
  w.write(out);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "quantize" && argc == 4) {
      quantize_file(argv[2], static_cast<unsigned>(std::stoul(argv[3])));
    } else if (mode == "seed" && argc == 3) {
      seed_file(argv[2]);
    } else if (mode == "dequant" && argc == 4) {
      dequant_file(argv[2], argv[3]);
    } else {
      std::fprintf(stderr, "usage: gguf_testgen quantize OUT.gguf SEED | seed OUT.gguf | dequant IN.gguf OUT.gguf\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gguf_testgen: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
