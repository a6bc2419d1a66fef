// The deferred / subset LM head of model::Session on random tiny models of every weight kind
// a Model holds: stored F32/F16/BF16, load-time q4_0 (int8, int8x2 and f32 activations), and
// GGUF block rows (Q8_0, Q4_0, Q4_1). The subset logits must be bit-identical to the full
// head's at the same rows, for empty, single, full and random row sets, after decode_hidden
// and after a multi-token prefill in LogitsMode::Hidden.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "kernels/q4_weight_matmul.h"
#include "kernels/ref_matmul.h"
#include "model/gguf_model.h"
#include "model/model.h"
#include "model/testing/test_checkpoint.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ringlm;
using model::LogitsMode;
using model::Session;

namespace {

fs::path scratch_root() { return fs::temp_directory_path() / ("ringlm_lm_head_test_" + std::to_string(::getpid())); }

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(scratch_root(), ec);
  }
} cleanup;

fs::path checkpoint(io::DType dtype, std::uint64_t seed) {
  const fs::path dir = scratch_root() / (std::string("hf-") + io::dtype_name(dtype) + "-" + std::to_string(seed));
  if (!fs::exists(dir / "config.json"))
    model::testing::write_test_checkpoint(dir, {.preset = "tiny", .seed = seed, .dtype = dtype, .tokenizer_dir = {}});
  return dir;
}

nlohmann::json text_config(const fs::path& dir) {
  std::ifstream in(dir / "config.json");
  nlohmann::json c = nlohmann::json::parse(in);
  return c.contains("text_config") ? c["text_config"] : c;
}

std::shared_ptr<const model::Model> gguf_model(io::DType type, std::uint64_t seed) {
  const fs::path dir = checkpoint(io::DType::F32, seed);
  const fs::path path = dir / (std::string("model-") + io::dtype_name(type) + ".gguf");
  auto hf = model::Model::load(dir, {.threads = 1, .weights = model::WeightFormat::stored});
  model::export_gemma4_gguf(hf->source(), text_config(dir), nullptr, path, {.matrix_type = type});
  return model::load_gguf_model(path, {.threads = 2, .weights = model::WeightFormat::stored});
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::vector<std::vector<std::int32_t>> row_sets(int vocab, std::mt19937& rng) {
  std::vector<std::vector<std::int32_t>> sets = {{}, {0}, {vocab - 1}};
  std::vector<std::int32_t> all(vocab);
  std::iota(all.begin(), all.end(), 0);
  sets.push_back(all);
  std::uniform_int_distribution<int> id(0, vocab - 1);
  for (int n : {2, 17, 300}) {
    std::vector<std::int32_t> s(n);
    for (auto& x : s) x = id(rng);  // unsorted, repeats possible
    sets.push_back(s);
  }
  return sets;
}

// Checks every head call against `full` (the logits the session's full head gave).
void expect_subsets_match(Session& s, const std::vector<float>& full, std::mt19937& rng, const std::string& what) {
  const int V = static_cast<int>(full.size());
  for (const auto& ids : row_sets(V, rng)) {
    std::vector<float> compact(ids.size(), 7.0f);
    s.head_logits_compact(ids, compact);
    std::vector<bool> listed(V, false);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      listed[ids[i]] = true;
      ASSERT_TRUE(same_bits(compact[i], full[ids[i]]))
          << what << ": id " << ids[i] << " compact " << compact[i] << " vs full " << full[ids[i]];
    }
    auto row = s.head_logits_rows(ids);
    ASSERT_EQ(row.size(), full.size());
    for (int v = 0; v < V; ++v) {
      if (listed[v])
        ASSERT_TRUE(same_bits(row[v], full[v])) << what << ": id " << v << " row " << row[v] << " vs full " << full[v];
      else
        ASSERT_EQ(row[v], -std::numeric_limits<float>::infinity()) << what << ": unlisted id " << v;
    }
  }
  // The full head over the kept state is again the decode row (after the subset calls).
  auto again = s.head_logits();
  for (int v = 0; v < V; ++v) ASSERT_TRUE(same_bits(again[v], full[v])) << what << ": head_logits() id " << v;
}

// Decode with logits on one session and without on another: the same state and logits.
void check_model(const std::shared_ptr<const model::Model>& m, const std::string& what, std::uint64_t seed) {
  const int V = m->config().vocab_size;
  std::mt19937 rng(static_cast<unsigned>(seed));
  Session with(m, {.context_tokens = 256}), without(m, {.context_tokens = 256});
  // A prompt longer than one chunk, through LogitsMode::Last and LogitsMode::Hidden.
  std::vector<std::int32_t> ids(70);
  std::vector<std::int64_t> pos(70);
  for (int i = 0; i < 70; ++i) ids[i] = static_cast<std::int32_t>(rng() % V), pos[i] = i;
  auto first = with.prefill(ids, pos, LogitsMode::Last);
  std::vector<float> full(first.begin(), first.end());
  EXPECT_TRUE(without.prefill(ids, pos, LogitsMode::Hidden).empty());
  for (int h = 0; h < m->config().hidden_size; ++h) ASSERT_TRUE(same_bits(with.head_input()[h], without.head_input()[h]));
  expect_subsets_match(without, full, rng, what + " after prefill");
  for (int step = 0; step < 3; ++step) {
    const std::int32_t id = static_cast<std::int32_t>(rng() % V);
    auto d = with.decode(id, 70 + step);
    full.assign(d.begin(), d.end());
    without.decode_hidden(id, 70 + step);
    expect_subsets_match(without, full, rng, what + " after decode step " + std::to_string(step));
    // The session that ran the full head can take subset calls too.
    expect_subsets_match(with, full, rng, what + " (Last mode) step " + std::to_string(step));
  }
}

}  // namespace

TEST(LmHead, SubsetRowsAreBitIdenticalForStoredWeights) {
  for (io::DType dtype : {io::DType::BF16, io::DType::F16, io::DType::F32}) {
    auto m = model::Model::load(checkpoint(dtype, 5), {.threads = 2, .weights = model::WeightFormat::stored});
    EXPECT_EQ(Session(m).head_row_granularity(), 1u);
    check_model(m, io::dtype_name(dtype), 1);
  }
}

TEST(LmHead, SubsetRowsAreBitIdenticalForLoadTimeQ4Groups) {
  for (auto mode : {kernels::Q4Activations::int8, kernels::Q4Activations::int8x2, kernels::Q4Activations::f32}) {
    auto m = model::Model::load(checkpoint(io::DType::BF16, 6),
                                {.threads = 2, .weights = model::WeightFormat::q4_0, .activations = mode});
    ASSERT_EQ(m->weights().lm_head.dtype, io::DType::Q4_0) << "the tiny head (64 columns) is quantized";
    EXPECT_EQ(Session(m).head_row_granularity(), mode == kernels::Q4Activations::f32 ? 1u : 16u);
    check_model(m, "q4_0 activations " + std::to_string(static_cast<int>(mode)), 2);
  }
}

TEST(LmHead, SubsetRowsAreBitIdenticalForGgufBlocks) {
  for (io::DType type : {io::DType::Q8_0, io::DType::Q4_0, io::DType::Q4_1}) {
    auto m = gguf_model(type, 7);
    ASSERT_EQ(m->weights().lm_head.dtype, type);
    check_model(m, std::string("GGUF ") + io::dtype_name(type), 3);
  }
}

TEST(LmHead, SubsetValuesMatchAFloat64Reference) {
  // Independent of the kernels: softcap(W[id] . h) in float64 from the stored BF16 rows.
  auto m = model::Model::load(checkpoint(io::DType::BF16, 8), {.threads = 1, .weights = model::WeightFormat::stored});
  const auto& cfg = m->config();
  Session s(m);
  std::vector<std::int32_t> ids = {5, 99, 400};
  std::vector<std::int64_t> pos = {0, 1, 2};
  s.prefill(ids, pos, LogitsMode::Hidden);
  std::vector<std::int32_t> rows = {0, 1, 77, 500, cfg.vocab_size - 1};
  std::vector<float> got(rows.size());
  s.head_logits_compact(rows, got);
  std::vector<float> w(cfg.hidden_size);
  const double cap = cfg.final_logit_softcapping;
  ASSERT_GT(cap, 0.0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    kernels::load_row_f32(m->weights().lm_head, rows[i], w.data());
    double dot = 0;
    for (int c = 0; c < cfg.hidden_size; ++c) dot += double(w[c]) * s.head_input()[c];
    const double ref = cap * std::tanh(dot / cap);
    EXPECT_NEAR(got[i], ref, 1e-5 * (1 + std::abs(ref))) << "row " << rows[i];
  }
}

TEST(LmHead, MisuseIsAClearError) {
  auto m = model::Model::load(checkpoint(io::DType::BF16, 5), {.threads = 1, .weights = model::WeightFormat::stored});
  Session s(m);
  const std::vector<std::int32_t> one = {3};
  std::vector<float> out(1);
  EXPECT_THROW(s.head_logits(), Error) << "nothing run yet";
  EXPECT_THROW(s.head_logits_rows(one), Error);
  s.decode_hidden(1, 0);
  EXPECT_NO_THROW(s.head_logits_compact(one, out));
  const std::vector<std::int32_t> bad = {m->config().vocab_size};
  EXPECT_THROW(s.head_logits_rows(bad), Error);
  const std::vector<std::int32_t> negative = {-1};
  EXPECT_THROW(s.head_logits_compact(negative, out), Error);
  std::vector<float> small;
  EXPECT_THROW(s.head_logits_compact(one, small), Error) << "output size must match";
  // A prefill without logits, a truncate or a reset leaves no state for the head.
  std::vector<std::int32_t> ids = {2};
  std::vector<std::int64_t> pos = {1};
  s.prefill(ids, pos, LogitsMode::None);
  EXPECT_THROW(s.head_logits(), Error);
  s.decode_hidden(4, 2);
  s.truncate(1);
  EXPECT_THROW(s.head_logits(), Error);
  s.decode_hidden(4, 1);
  s.reset();
  EXPECT_THROW(s.head_logits_compact(one, out), Error);
}
