// The Gemma 4 assistant from a gemma4-assistant GGUF file (model/assistant_gguf.h): an F32
// file gives bit-identical step outputs to the same seed's safetensors checkpoint; Q8_0 /
// Q4_0 files run on the target's kernels (the repacked layouts, int8 activations) when the
// options say so, and q4_0 weights quantize an F32 file's matrices at load; broken files
// fail naming the file and the tensor or key. (The float64 reference of the GGUF assistant:
// assistant_reference_test.py.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "io/gguf_gemma4.h"
#include "io/gguf_writer.h"
#include "io/safetensors.h"
#include "model/assistant.h"
#include "model/assistant_gguf.h"
#include "model/testing/test_assistant.h"
#include "util/error.h"

using namespace ringlm;
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const struct Dir {  // removed when the test binary exits
    fs::path p = fs::temp_directory_path() / ("ringlm-assistant-gguf-" + std::to_string(::getpid()));
    ~Dir() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } dir;
  fs::create_directories(dir.p);
  return dir.p;
}

fs::path tiny_gguf(const std::string& name, io::DType type, const std::string& preset = "tiny") {
  const fs::path out = scratch() / (name + ".gguf");
  model::testing::write_test_assistant_gguf(out, {.preset = preset, .seed = 7}, type);
  return out;
}

// A source that hides the named tensors, to write files that lack them.
class Hiding : public io::TensorSource {
 public:
  Hiding(std::unique_ptr<io::TensorSource> s, std::set<std::string> hide) : s_(std::move(s)), hide_(std::move(hide)) {}
  const io::TensorView* find(std::string_view n) const override {
    return hide_.contains(std::string(n)) ? nullptr : s_->find(n);
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (auto& n : s_->names())
      if (!hide_.contains(n)) out.push_back(n);
    return out;
  }
  std::string describe() const override { return s_->describe(); }

 private:
  std::unique_ptr<io::TensorSource> s_;
  std::set<std::string> hide_;
};

fs::path gguf_without(const std::string& name, const std::set<std::string>& hide) {
  const fs::path dir = scratch() / (name + "-st");
  fs::remove_all(dir);
  model::testing::write_test_assistant(dir, {.preset = "tiny", .seed = 7, .dtype = io::DType::F32});
  std::ifstream in(dir / "config.json");
  const auto config = nlohmann::json::parse(in);
  Hiding src(io::open_safetensors_dir(dir), hide);
  const fs::path out = scratch() / (name + ".gguf");
  model::export_assistant_gguf(src, config, out, io::DType::F32);
  return out;
}

std::string load_error(const fs::path& p) {
  try {
    model::AssistantModel::load(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded)";
}

struct Io {
  std::vector<float> x, k, v;
  std::vector<std::int32_t> pos;
};

// One step on random inputs (the same for every model given the same seed).
std::vector<float> step_out(std::shared_ptr<const model::AssistantModel> m, unsigned seed) {
  const auto& c = m->config();
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const int n_keys = 40, dS = c.text.head_dim, dF = c.text.global_head_dim;
  Io s, f;
  std::vector<float> x(2 * static_cast<std::size_t>(c.backbone_hidden));
  for (float& a : x) a = n(rng);
  for (Io* io : {&s, &f}) {
    const int d = io == &s ? dS : dF;
    io->k.resize(static_cast<std::size_t>(n_keys * d)), io->v.resize(io->k.size());
    for (float& a : io->k) a = n(rng);
    for (float& a : io->v) a = n(rng);
    for (int i = 0; i < n_keys; ++i) io->pos.push_back(i);
  }
  kernels::KvSlots sl{s.k.data(), s.v.data(), s.pos.data(), n_keys, 1, dS};
  kernels::KvSlots fu{f.k.data(), f.v.data(), f.pos.data(), n_keys, 1, dF};
  model::AssistantStep step(m, nullptr);
  step.run(x, n_keys, sl, fu);
  std::vector<float> out(step.logits().begin(), step.logits().end());
  out.insert(out.end(), step.h_next().begin(), step.h_next().end());
  return out;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

}  // namespace

TEST(AssistantGguf, F32FileGivesTheSafetensorsCheckpointsBits) {
  for (const std::string preset : {"tiny", "tiny-dense"}) {
    const fs::path dir = scratch() / (preset + "-st-f32");
    fs::remove_all(dir);
    model::testing::write_test_assistant(dir, {.preset = preset, .seed = 7, .dtype = io::DType::F32});
    const auto st = model::AssistantModel::load(dir);
    const auto gg = model::AssistantModel::load(tiny_gguf(preset + "-f32", io::DType::F32, preset));
    const auto &a = st->config(), &b = gg->config();
    EXPECT_EQ(a.backbone_hidden, b.backbone_hidden);
    EXPECT_EQ(a.ordered_embeddings, b.ordered_embeddings);
    if (a.ordered_embeddings) {  // (a dense head's config still carries the unused defaults)
      EXPECT_EQ(a.num_centroids, b.num_centroids);
      EXPECT_EQ(a.centroid_top_k, b.centroid_top_k);
    }
    EXPECT_EQ(a.text.num_layers, b.text.num_layers);
    EXPECT_EQ(a.text.sliding_window, b.text.sliding_window);
    EXPECT_EQ(a.text.rope_full.inv_freq, b.text.rope_full.inv_freq);
    EXPECT_EQ(st->token_ordering, gg->token_ordering);
    EXPECT_EQ(step_out(st, 3), step_out(gg, 3)) << preset;
  }
}

TEST(AssistantGguf, QuantizedFilesRunOnTheTargetsKernels) {
  const model::AssistantOptions kernels_opt{model::WeightFormat::q4_0, kernels::Q4Activations::int8x2};
  for (io::DType t : {io::DType::Q8_0, io::DType::Q4_0}) {
    const fs::path p = tiny_gguf(std::string("dense-") + io::dtype_name(t), t, "tiny-dense");
    const auto plain = model::AssistantModel::load(p);
    const auto fast = model::AssistantModel::load(p, kernels_opt);
    for (const auto* w : {&fast->layers[0].q_proj, &fast->layers[3].down_proj, &fast->pre_projection, &fast->embed}) {
      EXPECT_EQ(w->dtype, t);  // the file's blocks, never re-quantized
      EXPECT_TRUE(w->packed);  // q4p16 / q8p16
      EXPECT_EQ(w->activations, kernels::Q4Activations::int8x2);
    }
    const auto a = step_out(plain, 5), b = step_out(fast, 5);
    EXPECT_NE(a, b);  // the kernels round the activations
    EXPECT_GT(cosine(a, b), 0.999) << io::dtype_name(t);
  }
  // An F32 file under q4_0 weights: quantized at load like the target's matrices; the
  // centroid head's table stays stored (its candidate rows are read one by one).
  const auto q = model::AssistantModel::load(tiny_gguf("c-f32", io::DType::F32), kernels_opt);
  EXPECT_EQ(q->layers[1].gate_proj.dtype, io::DType::Q4_0);
  EXPECT_TRUE(q->layers[1].gate_proj.packed);
  EXPECT_EQ(q->centroids.dtype, io::DType::Q4_0);
  EXPECT_EQ(q->embed.dtype, io::DType::F32);
  EXPECT_EQ(q->embed.activations, kernels::Q4Activations::f32);
  // (Its numerics: q4_0 rounding can move the centroid head's top-k clusters, so no cosine
  // bound here; the float64 test covers the quantized files.)
  EXPECT_NE(step_out(q, 9), step_out(model::AssistantModel::load(tiny_gguf("c-f32", io::DType::F32)), 9));
}

TEST(AssistantGguf, BrokenFilesNameTheFileAndTheTensor) {
  const fs::path good = tiny_gguf("good", io::DType::Q8_0);
  const fs::path cut = scratch() / "cut.gguf";
  fs::copy_file(good, cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, fs::file_size(good) / 2);
  std::string e = load_error(cut);
  EXPECT_NE(e.find(cut.string()), std::string::npos) << e;

  const fs::path missing = gguf_without("missing", {"layers.1.mlp.up_proj.weight"});
  e = load_error(missing);
  EXPECT_NE(e.find(missing.string()), std::string::npos) << e;
  EXPECT_NE(e.find("missing tensor blk.1.ffn_up.weight"), std::string::npos) << e;

  const fs::path half_head = gguf_without("half-head", {"masked_embedding.token_ordering"});
  e = load_error(half_head);
  EXPECT_NE(e.find(half_head.string()), std::string::npos) << e;
  EXPECT_NE(e.find("masked_embd_ordering"), std::string::npos) << e;

  // Not a GGUF file, and a GGUF file of another architecture.
  const fs::path text = scratch() / "not.gguf";
  std::ofstream(text) << "hello";
  e = load_error(text);
  EXPECT_NE(e.find("not a GGUF file"), std::string::npos) << e;
  const fs::path other = scratch() / "other.gguf";
  io::GgufWriter w;
  w.add_string("general.architecture", "gemma4");
  w.write(other);
  e = load_error(other);
  EXPECT_NE(e.find("general.architecture is 'gemma4'; expected 'gemma4-assistant'"), std::string::npos) << e;
}

// A source whose one tensor claims another dtype (a hostile file's integer "matrix").
class Retyping : public io::TensorSource {
 public:
  Retyping(std::unique_ptr<io::TensorSource> s, const std::string& name, io::DType t) : s_(std::move(s)), name_(name) {
    view_ = *s_->find(name);
    view_.dtype = t;
  }
  const io::TensorView* find(std::string_view n) const override { return n == name_ ? &view_ : s_->find(n); }
  std::vector<std::string> names() const override { return s_->names(); }
  std::string describe() const override { return s_->describe(); }

 private:
  std::unique_ptr<io::TensorSource> s_;
  std::string name_;
  io::TensorView view_;
};

TEST(AssistantGguf, AnIntegerMatrixIsRefusedByName) {
  const fs::path p = tiny_gguf("int-matrix", io::DType::F32);
  auto file = std::make_shared<const io::GgufFile>(p);
  auto src = std::make_unique<io::GgufTensorSource>(file, model::assistant_canonical_name, model::kAssistantGgufArch, true);
  Retyping bad(std::move(src), "layers.2.mlp.gate_proj.weight", io::DType::I32);
  std::string e;
  try {
    model::AssistantModel::from_source(model::assistant_gguf_config(*file), std::make_unique<Retyping>(std::move(bad)),
                                       {});
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("layers.2.mlp.gate_proj.weight: dtype I32"), std::string::npos) << e;
}

TEST(AssistantGguf, NamesMapBothWays) {
  for (const char* g : {"nextn.pre_projection.weight", "masked_embd_ordering", "blk.3.layer_output_scale.weight",
                        "token_embd.weight", "output_norm.weight", "blk.0.attn_q_norm.weight"}) {
    const auto c = model::assistant_canonical_name(g);
    ASSERT_TRUE(c) << g;
    EXPECT_EQ(model::assistant_gguf_name(*c), g);
  }
  EXPECT_EQ(model::assistant_canonical_name("blk.0.attn_q.weight"), "layers.0.self_attn.q_proj.weight");
  EXPECT_FALSE(model::assistant_canonical_name("nextn.embed_tokens.weight"));
}
