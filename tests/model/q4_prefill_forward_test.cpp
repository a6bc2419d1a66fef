// The forward pass with the q4 prefill GEMM (kernels/q4_prefill_vnni_impl.h, prefill chunks of
// 17+ rows on AVX-512 VNNI) against the same forward with it switched off (the multi-row
// tile for every chunk): the logits of every prompt position, one and two activation planes.
// The kernel keeps the tile's arithmetic, so they must agree bit for bit; the KL and the
// largest difference are reported to say how far off a failure is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "kernels/dispatch.h"
#include "model/model.h"
#include "model/testing/test_checkpoint.h"

namespace fs = std::filesystem;
using namespace ringlm;
using model::LogitsMode;
using model::Session;

namespace {

std::shared_ptr<const model::Model> tiny_q4(kernels::Q4Activations act) {
  const fs::path dir = fs::temp_directory_path() /
                       ("ringlm_q4_prefill_test_" + std::to_string(static_cast<int>(act)) + "_" + std::to_string(::getpid()));
  model::testing::TestCheckpointOptions o;
  o.preset = "tiny";
  o.seed = 11;
  model::testing::write_test_checkpoint(dir, o);
  auto m = model::Model::load(dir, {.threads = 2, .weights = model::WeightFormat::q4_0, .activations = act});
  fs::remove_all(dir);  // the mapping keeps the data alive
  return m;
}

// Logits of every position of `ids`, prefilled in chunks of up to Session::kMaxChunk rows.
std::vector<std::vector<float>> prefill_rows(const std::shared_ptr<const model::Model>& m,
                                             const std::vector<std::int32_t>& ids) {
  Session s(m);
  std::vector<std::vector<float>> rows;
  for (std::size_t done = 0; done < ids.size();) {
    const std::size_t n = std::min<std::size_t>(Session::kMaxChunk, ids.size() - done);
    std::vector<std::int32_t> chunk(ids.begin() + static_cast<std::ptrdiff_t>(done),
                                    ids.begin() + static_cast<std::ptrdiff_t>(done + n));
    std::vector<std::int64_t> pos(n);
    for (std::size_t i = 0; i < n; ++i) pos[i] = static_cast<std::int64_t>(done + i);
    s.prefill(chunk, pos, LogitsMode::All,
              [&](std::size_t, std::span<const float> r) { rows.emplace_back(r.begin(), r.end()); });
    done += n;
  }
  return rows;
}

// KL(p || q) of the softmaxes of two logit rows, in float64.
double kl(const std::vector<float>& a, const std::vector<float>& b) {
  const double ma = *std::max_element(a.begin(), a.end()), mb = *std::max_element(b.begin(), b.end());
  double za = 0, zb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    za += std::exp(a[i] - ma);
    zb += std::exp(b[i] - mb);
  }
  double k = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double la = a[i] - ma - std::log(za), lb = b[i] - mb - std::log(zb);
    k += std::exp(la) * (la - lb);
  }
  return k;
}

}  // namespace

TEST(Q4PrefillForward, PrefillLogitsEqualThoseOfTheTilePath) {
  if (!kernels::isa_available(kernels::Isa::avx512vnni)) GTEST_SKIP() << "no AVX-512 VNNI: the prefill GEMM does not run";
  const kernels::Isa saved = kernels::active_isa();
  const bool saved_switch = kernels::q4_prefill_gemm();
  kernels::force_isa(kernels::Isa::avx512vnni);
  for (auto act : {kernels::Q4Activations::int8, kernels::Q4Activations::int8x2}) {
    auto m = tiny_q4(act);
    std::mt19937 rng(5);
    std::vector<std::int32_t> ids(150);  // chunks of 64, 64 and 22 rows: all take the new GEMM
    for (auto& id : ids) id = static_cast<std::int32_t>(rng() % static_cast<unsigned>(m->config().vocab_size));
    kernels::set_q4_prefill_gemm(false);
    const auto old_rows = prefill_rows(m, ids);
    kernels::set_q4_prefill_gemm(true);
    const auto new_rows = prefill_rows(m, ids);
    ASSERT_EQ(old_rows.size(), ids.size());
    ASSERT_EQ(new_rows.size(), ids.size());
    double worst_kl = 0;
    float worst_diff = 0;
    for (std::size_t t = 0; t < ids.size(); ++t) {
      worst_kl = std::max(worst_kl, kl(old_rows[t], new_rows[t]));
      for (std::size_t i = 0; i < old_rows[t].size(); ++i)
        worst_diff = std::max(worst_diff, std::fabs(old_rows[t][i] - new_rows[t][i]));
    }
    EXPECT_EQ(worst_diff, 0.0f) << "activations " << static_cast<int>(act) << ": KL up to " << worst_kl;
    EXPECT_LT(worst_kl, 1e-12);
  }
  kernels::force_isa(saved);
  kernels::set_q4_prefill_gemm(saved_switch);
}
