// Sampled speculative decoding with a drafter that samples from a distribution q
// (engine/draft.h, sampling::Sampler::sample_draft): the emitted tokens must follow the
// target sampler's distribution exactly. A chi-square test compares, over thousands of
// seeds, the tokens of speculative runs with a synthetic stochastic drafter against plain
// runs. The drafter's q is a fixed distribution tilted towards token ids = 0 (mod 4), so a
// wrong acceptance or residual rule shifts mass between the four residue classes the test
// counts. Fixed seeds: the statistic is deterministic; the threshold is p < 1e-3. Checked
// to fail with a wrong rule: a rejection drawing from p instead of norm(max(0, p - q))
// gave p = 4e-26, an acceptance 1.3 times too likely p = 6e-21.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <unistd.h>

#include "engine/batch_scheduler.h"
#include "model/testing/test_checkpoint.h"

namespace fs = std::filesystem;
using namespace ringlm;

namespace {

const fs::path& model_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("ringlm_spec_sampling_test_" + std::to_string(::getpid()));
    model::testing::TestCheckpointOptions o;
    o.preset = "tiny";
    o.seed = 21;
    o.tokenizer_dir = fs::path(RINGLM_TOKENIZER_DIR);
    model::testing::write_test_checkpoint(d, o);
    return d;
  }();
  return dir;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("ringlm_spec_sampling_test_" + std::to_string(::getpid())), ec);
  }
} cleanup;

// Upper regularized incomplete gamma Q(a, x): series for x < a + 1, else a continued
// fraction (modified Lentz). The chi-square p-value of X^2 with k degrees of freedom is
// Q(k/2, X^2/2).
double gamma_q(double a, double x) {
  if (x <= 0) return 1.0;
  const double lg = std::lgamma(a);
  if (x < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 1000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (term < sum * 1e-15) break;
    }
    return 1.0 - sum * std::exp(-x + a * std::log(x) - lg);
  }
  double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return std::exp(-x + a * std::log(x) - lg) * h;
}

TEST(SpeculativeSampling, ChiSquareReferenceValues) {
  // Known chi-square upper tail values: P(X^2_1 > 3.841) = 0.05, P(X^2_10 > 23.209) = 0.01,
  // P(X^2_63 > 103.4) ~= 0.001 (scipy.stats.chi2.sf).
  EXPECT_NEAR(gamma_q(0.5, 3.841 / 2), 0.05, 1e-4);
  EXPECT_NEAR(gamma_q(5.0, 23.209 / 2), 0.01, 1e-4);
  EXPECT_NEAR(gamma_q(31.5, 103.4 / 2), 0.001, 2e-4);
}

// Draws each drafted token from the fixed q, independently of the history (the rule holds
// for any q, however poor).
class TiltedDrafter final : public engine::Drafter {
 public:
  TiltedDrafter(const std::vector<float>* q, std::uint64_t seed) : q_(q), rng_(seed) {}
  void propose(std::span<const std::int32_t>, std::span<const std::int32_t>, int max,
               std::vector<std::int32_t>& out) override {
    std::discrete_distribution<std::int32_t> pick(q_->begin(), q_->end());
    for (int i = 0; i < max; ++i) out.push_back(pick(rng_));
  }
  std::span<const float> distribution(std::size_t) const override { return *q_; }

 private:
  const std::vector<float>* q_;
  std::mt19937_64 rng_;
};

constexpr int kTokens = 4;  // per run; the first comes from the prompt's logits (never drafted)

// Bins of (t1, t2, t3) by residue mod 4, counted over `runs` seeds starting at seed0.
std::map<int, int> sample_bins(engine::Engine& engine, const engine::DraftParams& draft, std::uint64_t seed0, int runs,
                               engine::BatchStats* stats) {
  engine::BatchScheduler sched(engine, {.max_sequences = 32, .reuse_slot_cache = false,
                                        .draft_max = draft.source == engine::DraftSource::none ? 0 : draft.max_tokens});
  std::map<int, int> bins;
  const std::vector<std::int32_t> prompt = {310, 420, 333, 512, 601, 377, 450, 302};
  int admitted = 0;
  for (;;) {
    while (admitted < runs && sched.has_room()) {
      engine::SequenceRequest req;
      req.prompt = prompt;
      req.params.max_tokens = kTokens;
      req.params.ignore_stop_ids = true;
      req.params.sampling.temperature = 6.0f;  // spread over the vocabulary: q and p overlap
      req.params.sampling.seed = seed0 + static_cast<std::uint64_t>(admitted);
      req.params.draft = draft;
      req.on_done = [&bins](engine::SequenceOutcome&& o) {
        ASSERT_TRUE(o.error.empty()) << o.error;
        ASSERT_EQ(o.result.completion_tokens, kTokens);
      };
      auto tokens = std::make_shared<std::vector<std::int32_t>>();
      req.on_token = [tokens, &bins](const engine::TokenEvent& e) {
        tokens->push_back(e.id);
        if (tokens->size() == kTokens) {
          int key = 0;
          for (int i = 1; i < kTokens; ++i) key = key * 4 + (*tokens)[static_cast<std::size_t>(i)] % 4;
          ++bins[key];
        }
        return true;
      };
      sched.admit(std::move(req));
      ++admitted;
    }
    if (sched.step() == 0 && admitted == runs) break;
  }
  if (stats) *stats = sched.stats();
  return bins;
}

// Two-sample chi-square on equal-size samples: sum (a - b)^2 / (a + b) over the cells,
// cells - 1 degrees of freedom. Returns the p-value.
double two_sample_p(const std::map<int, int>& a, const std::map<int, int>& b, int* cells) {
  std::map<int, std::pair<int, int>> joint;
  for (auto [k, n] : a) joint[k].first = n;
  for (auto [k, n] : b) joint[k].second = n;
  double x2 = 0;
  *cells = 0;
  for (auto [k, ab] : joint) {
    if (ab.first + ab.second == 0) continue;
    x2 += std::pow(ab.first - ab.second, 2.0) / (ab.first + ab.second);
    ++*cells;
  }
  return gamma_q((*cells - 1) / 2.0, x2 / 2.0);
}

}  // namespace

TEST(SpeculativeSampling, StochasticDrafterKeepsTheSamplingDistribution) {
  engine::Engine engine({.model_dir = model_dir(), .threads = 2, .weights = model::WeightFormat::q4_0});
  const int vocab = engine.tokenizer().vocab_size();
  // q: uniform tilted by residue class (weights 3, 1.5, 0.75, 0.25 for id % 4 = 0..3).
  std::vector<float> q(static_cast<std::size_t>(vocab));
  const float tilt[4] = {3.0f, 1.5f, 0.75f, 0.25f};
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += q[static_cast<std::size_t>(i)] = tilt[i % 4];
  for (auto& v : q) v = static_cast<float>(v / sum);
  std::atomic<std::uint64_t> drafter_seed{1};
  engine::DraftParams spec;
  spec.source = engine::DraftSource::external;
  spec.max_tokens = 3;
  spec.make_external = [&] { return std::make_unique<TiltedDrafter>(&q, drafter_seed++); };

  constexpr int kRuns = 4000;
  engine::BatchStats stats;
  const auto drafted = sample_bins(engine, spec, 1, kRuns, &stats);
  const auto plain = sample_bins(engine, {}, 1000001, kRuns, nullptr);
  // Both branches of the rule ran often: some drafts accepted, most not.
  ASSERT_GT(stats.drafted, 1000u);
  const double share = static_cast<double>(stats.accepted) / static_cast<double>(stats.drafted);
  EXPECT_GT(share, 0.05);
  EXPECT_LT(share, 0.95);
  int cells = 0;
  const double p = two_sample_p(drafted, plain, &cells);
  EXPECT_GT(cells, 40);
  EXPECT_GE(p, 1e-3) << "speculative sampling changed the distribution: chi-square p = " << p << " over " << cells
                     << " cells (acceptance " << share << ")";
  std::printf("speculative vs plain: p = %.4g over %d cells, drafted %llu, accepted %.3f\n", p, cells,
              static_cast<unsigned long long>(stats.drafted), share);
}
