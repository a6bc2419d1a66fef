// `ringlm convert` and the packed model directory: the planned sizes (E2B's sidecar must
// match the model card byte for byte, checked without writing gigabytes), a full convert of
// a tiny checkpoint whose files match the plan, loading it by mapping, and hostile files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "kernels/q4_weight_matmul.h"
#include "kernels/q4_packed.h"
#include "model/converter.h"
#include "model/model.h"
#include "model/packed_format.h"
#include "model/testing/test_checkpoint.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ringlm;

namespace {

model::ModelConfig preset_config(const std::string& preset) {
  model::testing::TestCheckpointOptions o;
  o.preset = preset;
  return model::parse_model_config(model::testing::test_checkpoint_config_json(o), preset);
}

// A converted tiny checkpoint, made once per test binary run.
struct Converted {
  fs::path hf, out;
  ~Converted() {
    std::error_code ec;
    if (!out.empty()) fs::remove_all(out.parent_path(), ec);
  }
};
const Converted& converted_tiny() {
  static Converted c = [] {
    Converted r;
    const fs::path base = fs::temp_directory_path() / ("ringlm_convert_test_" + std::to_string(::getpid()));
    r.hf = base / "hf";
    r.out = base / "packed";
    model::testing::TestCheckpointOptions o;
    o.preset = "tiny";
    o.seed = 7;
    model::testing::write_test_checkpoint(r.hf, o);
    model::convert_to_packed_dir(r.hf, r.out);
    return r;
  }();
  return c;
}

// A copy of the converted directory the test may damage.
fs::path scratch_copy(const std::string& name) {
  const fs::path dst = converted_tiny().out.parent_path() / name;
  fs::remove_all(dst);
  fs::copy(converted_tiny().out, dst, fs::copy_options::recursive);
  return dst;
}

std::string load_error(const fs::path& dir) {
  try {
    model::Model::load(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<float> last_logits(const std::shared_ptr<const model::Model>& m, const std::vector<std::int32_t>& ids,
                               kv::KvType kv_type = kv::KvType::f16) {
  model::Session s(m, {.kv_type = kv_type});
  std::vector<std::int64_t> pos(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) pos[i] = static_cast<std::int64_t>(i);
  auto out = s.prefill(ids, pos);
  return {out.begin(), out.end()};
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

}  // namespace

TEST(Convert, E2bSidecarPlanHasTheModelCardSizes) {
  const auto c = preset_config("e2b");
  const std::vector<std::pair<std::string, std::uint64_t>> card = {
      {"embed_per_layer.i8", 2348810240ull}, {"embed_tokens.i8", 402653184ull},
      {"proj.f32", 55050240ull},            {"embed_per_layer.scale.f32", 1048576ull},
      {"embed_tokens.scale.f32", 1048576ull}, {"proj_norm.f32", 1024ull},
      {"meta.json", 231ull}};
  const auto plan = model::plan_sidecar(c);
  ASSERT_EQ(plan.size(), card.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < card.size(); ++i) {
    EXPECT_EQ(plan[i].name, card[i].first);
    EXPECT_EQ(plan[i].bytes, card[i].second) << plan[i].name;
    total += plan[i].bytes;
  }
  EXPECT_EQ(total, 2808612071ull);  // the card's directory total
  const std::string meta = model::sidecar_meta_json(c);
  EXPECT_EQ(meta.size(), 231u);
  // The card's recorded values, as JSON fields.
  for (const char* field : {"\"V\":262144", "\"D\":1536", "\"PLD\":8960", "\"L\":35", "\"ld\":256",
                            "\"embed_scale_pl\":16.0"})
    EXPECT_NE(meta.find(field), std::string::npos) << field << " in " << meta;
}

TEST(Convert, E2bPackedPlanIsAlignedAndSizedLikeLoadTimeQuantization) {
  const auto c = preset_config("e2b");
  const auto plan = model::plan_packed(c);
  std::uint64_t q4 = 0, prev_end = plan.data_start;
  for (const auto& t : plan.tensors) {
    EXPECT_EQ(t.offset % 64, 0u) << t.name;
    EXPECT_GE(t.offset, prev_end) << t.name;
    prev_end = t.offset + t.bytes;
    if (t.dtype == io::DType::Q4_0) q4 += t.bytes;
    else EXPECT_EQ(t.shape.size(), 1u) << t.name << ": every E2B matrix quantizes";
  }
  EXPECT_EQ(plan.file_bytes, prev_end);
  // LM head 262144 x 1536 at 18 bytes per 32 weights, then its row factors (4 bytes a row).
  EXPECT_EQ(plan.tensors[plan.tensors.size() - 4].name, "lm_head.weight");
  EXPECT_EQ(plan.tensors[plan.tensors.size() - 4].bytes, 262144ull * 1536 / 32 * 18);
  EXPECT_EQ(plan.tensors[plan.tensors.size() - 3].name, "lm_head.weight.row_factors");
  EXPECT_EQ(plan.tensors[plan.tensors.size() - 3].bytes, 262144ull * 4);
  EXPECT_GT(q4, 1'000'000'000ull);  // the issue's ~1.05 GB of layer weights + 0.23 GB head
  EXPECT_LT(q4, 1'400'000'000ull);
}

TEST(Convert, TinyConvertWritesExactlyThePlannedFiles) {
  const auto& c = converted_tiny();
  const auto cfg = model::load_model_config(c.out);
  for (const auto& s : model::plan_sidecar(cfg))
    EXPECT_EQ(fs::file_size(c.out / model::kSidecarDir / s.name), s.bytes) << s.name;
  const auto plan = model::plan_packed(cfg);
  EXPECT_EQ(fs::file_size(c.out / model::kPackedFile), plan.file_bytes);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    EXPECT_TRUE(fs::exists(c.out / f)) << f;
  // No temporary files left behind.
  for (const auto& e : fs::recursive_directory_iterator(c.out))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  std::ifstream meta(c.out / model::kSidecarDir / "meta.json");
  std::string text((std::istreambuf_iterator<char>(meta)), {});
  EXPECT_EQ(text, model::sidecar_meta_json(cfg));
}

TEST(Convert, LoadMapsQ4MatricesAndInt8Tables) {
  auto m = model::Model::load(converted_tiny().out, {.threads = 2, .weights = model::WeightFormat::q4_0});
  const auto& w = m->weights();
  EXPECT_EQ(w.embed_tokens.dtype, io::DType::I8);
  EXPECT_NE(w.embed_tokens.row_scales, nullptr);
  EXPECT_EQ(w.embed_tokens_ple.dtype, io::DType::I8);
  for (const auto* x : {&w.lm_head, &w.layers[0].q_proj, &w.layers[0].down_proj, &w.ple_model_projection}) {
    EXPECT_EQ(x->dtype, io::DType::Q4_0);
    EXPECT_TRUE(x->packed);
    EXPECT_FALSE(x->float_path);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(x->data) % 64, 0u);
  }
  // Tiny's per_layer_projection has 16 input columns: kept as F32 rows.
  EXPECT_EQ(w.layers[0].ple_projection.dtype, io::DType::F32);
  auto stored = model::Model::load(converted_tiny().out, {.threads = 2, .weights = model::WeightFormat::stored});
  EXPECT_TRUE(stored->weights().lm_head.float_path);
}

// The q4p16 matrices copied into memory at load (the default) or read from the file mapping:
// different storage, the same bytes, so the same logits bit for bit.
TEST(Convert, InMemoryCopyOfPackedWeightsGivesTheMappedLogits) {
  std::vector<std::int32_t> ids = {2, 17, 300, 5, 640, 9, 9, 100};
  auto mem = model::Model::load(converted_tiny().out, {.threads = 2, .weights = model::WeightFormat::q4_0});
  auto map = model::Model::load(converted_tiny().out,
                                {.threads = 2, .weights = model::WeightFormat::q4_0, .packed_weights_in_memory = false});
  EXPECT_NE(mem->weights().lm_head.data, map->weights().lm_head.data);
  EXPECT_NE(mem->weights().layers[0].q_proj.data, map->weights().layers[0].q_proj.data);
  const std::size_t bytes =
      kernels::Q4Packed{nullptr, static_cast<std::size_t>(map->weights().lm_head.rows),
                        static_cast<std::size_t>(map->weights().lm_head.cols)}.bytes();
  EXPECT_EQ(std::memcmp(mem->weights().lm_head.data, map->weights().lm_head.data, bytes), 0);
  const auto a = last_logits(mem, ids, kv::KvType::f16), b = last_logits(map, ids, kv::KvType::f16);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(Convert, StoredAndKernelPathsAgreeAndTrackTheCheckpoint) {
  std::mt19937 rng(3);
  std::vector<std::int32_t> ids(40);
  for (auto& id : ids) id = static_cast<std::int32_t>(rng() % 768);
  ids[0] = 2;
  // f32 KV: this compares weight paths. (With int8 activations the fast path's error is
  // ~1e-3 in cosine on this model, and any small perturbation, such as the f16 cache's
  // rounding, re-rolls which activation codes round the other way: cos(f16, f32 KV) on the
  // fast path alone is 0.9986 here. The KV types' own gates: logits_match_test.py and
  // q4_numerics_test.py.)
  const auto f32 = kv::KvType::f32;
  const auto ref = last_logits(model::Model::load(converted_tiny().out, {.weights = model::WeightFormat::stored}), ids, f32);
  const auto fast = last_logits(model::Model::load(converted_tiny().out, {.weights = model::WeightFormat::q4_0}), ids, f32);
  // The checkpoint quantized at load, run on the same float path: the same q4_0 matrices, so
  // only the int8 embedding rows differ from the converted directory.
  const auto hf = last_logits(model::Model::load(converted_tiny().hf, {.weights = model::WeightFormat::q4_0,
                                                                       .activations = kernels::Q4Activations::f32}),
                              ids, f32);
  for (float v : fast) ASSERT_TRUE(std::isfinite(v));
  EXPECT_GT(cosine(ref, fast), 0.999);
  EXPECT_GT(cosine(ref, hf), 0.99);
  EXPECT_LT(cosine(ref, hf), 0.9999999);  // but int8 embedding rows are not bf16 rows
}

TEST(Convert, ReconvertingReplacesTheDirectory) {
  const fs::path dir = scratch_copy("reconvert");
  const auto r = model::convert_to_packed_dir(converted_tiny().hf, dir);
  EXPECT_GT(r.q4_matrices, 0);
  EXPECT_GT(r.f32_matrices, 0);
  EXPECT_NO_THROW(model::Model::load(dir));
  EXPECT_THROW(model::convert_to_packed_dir(converted_tiny().hf, converted_tiny().hf), Error);
}

TEST(ConvertHostile, TruncatedWeightsFileNamesTensorAndRange) {
  const fs::path dir = scratch_copy("truncated");
  const fs::path f = dir / model::kPackedFile;
  fs::resize_file(f, fs::file_size(f) - 100);
  const std::string e = load_error(dir);
  EXPECT_NE(e.find("weights.rlpk"), std::string::npos) << e;
  EXPECT_NE(e.find("tensor norm.weight: bytes ["), std::string::npos) << e;  // the first tensor cut off
  EXPECT_NE(e.find("past the end"), std::string::npos) << e;
}

TEST(ConvertHostile, BadMagicVersionAndIndex) {
  auto patch = [](const fs::path& f, std::size_t at, const std::string& bytes) {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(at));
    io.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  fs::path dir = scratch_copy("magic");
  patch(dir / model::kPackedFile, 0, "XX");
  EXPECT_NE(load_error(dir).find("bad magic"), std::string::npos) << load_error(dir);
  dir = scratch_copy("version");
  patch(dir / model::kPackedFile, 8, std::string("\x09\x00", 2));
  EXPECT_NE(load_error(dir).find("format version 9"), std::string::npos) << load_error(dir);
  dir = scratch_copy("index");
  patch(dir / model::kPackedFile, 24, "[");
  EXPECT_NE(load_error(dir).find("invalid JSON"), std::string::npos) << load_error(dir);
  dir = scratch_copy("indexlen");
  patch(dir / model::kPackedFile, 16, std::string("\xff\xff\xff\x7f", 4));
  EXPECT_NE(load_error(dir).find("index length"), std::string::npos) << load_error(dir);
}

TEST(ConvertHostile, SidecarSizeAndMetaMismatch) {
  fs::path dir = scratch_copy("sidecar");
  const fs::path t = dir / model::kSidecarDir / "embed_tokens.i8";
  fs::resize_file(t, fs::file_size(t) - 1);
  std::string e = load_error(dir);
  EXPECT_NE(e.find("embed_tokens.i8"), std::string::npos) << e;
  EXPECT_NE(e.find("expected 49152"), std::string::npos) << e;  // 768 x 64
  dir = scratch_copy("meta");
  {
    std::ofstream m(dir / model::kSidecarDir / "meta.json", std::ios::trunc);
    m << "{\"V\":768,\"D\":64,\"L\":11,\"ld\":16,\"PLD\":160,\"V_pl\":768,\"dtype\":\"int8\"}";
  }
  e = load_error(dir);
  EXPECT_NE(e.find("meta.json: field L"), std::string::npos) << e;
  dir = scratch_copy("missing");
  fs::remove(dir / model::kSidecarDir / "embed_per_layer.scale.f32");
  e = load_error(dir);
  EXPECT_NE(e.find("embed_per_layer.scale.f32: missing"), std::string::npos) << e;
}

namespace {

// Rewrites the `which`-th "offset" value of weights.rlpk's index in place, keeping the byte
// length (JSON allows trailing spaces after a number), so only that field changes.
void set_index_offset(const fs::path& f, int which, std::uint64_t value) {
  std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
  std::string head(4096, '\0');
  io.read(head.data(), static_cast<std::streamsize>(head.size()));
  std::size_t at = 0;
  for (int i = 0; i <= which; ++i) at = head.find("\"offset\":", at) + 9;
  const std::size_t end = head.find(',', at);
  std::string repl = std::to_string(value);
  ASSERT_LE(repl.size(), end - at);
  repl.resize(end - at, ' ');
  io.clear();
  io.seekp(static_cast<std::streamoff>(at));
  io.write(repl.data(), static_cast<std::streamsize>(repl.size()));
}

}  // namespace

TEST(ConvertHostile, OverlappingAndMisalignedTensors) {
  fs::path dir = scratch_copy("overlap");
  set_index_offset(dir / model::kPackedFile, 1, 0);  // tensor 1 on top of tensor 0
  std::string e = load_error(dir);
  EXPECT_NE(e.find("overlap at byte"), std::string::npos) << e;
  dir = scratch_copy("misaligned");
  set_index_offset(dir / model::kPackedFile, 1, 65);
  e = load_error(dir);
  EXPECT_NE(e.find("is not 64-byte aligned"), std::string::npos) << e;
}
