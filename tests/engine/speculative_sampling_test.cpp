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

#include "engine/assistant_drafter.h"
#include "engine/batch_scheduler.h"
#include "model/testing/test_assistant.h"
#include "model/testing/test_checkpoint.h"
#include "../chi_square.h"
#include "../sanitizer_build.h"

namespace fs = std::filesystem;
using namespace ringlm;
using ringlm::testing::gamma_q;

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

struct BinSpec {
  float temperature = 6.0f;  // spread over the vocabulary: q and p overlap
  int modulus = 4;           // t1..t3 binned by id % modulus; 0: by t1's id alone
};

// Bins of (t1, t2, t3) by residue, counted over `runs` seeds starting at seed0.
std::map<int, int> sample_bins(engine::Engine& engine, const engine::DraftParams& draft, std::uint64_t seed0, int runs,
                               engine::BatchStats* stats, BinSpec spec = {}) {
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
      req.params.sampling.temperature = spec.temperature;
      req.params.sampling.seed = seed0 + static_cast<std::uint64_t>(admitted);
      req.params.draft = draft;
      req.on_done = [&bins](engine::SequenceOutcome&& o) {
        ASSERT_TRUE(o.error.empty()) << o.error;
        ASSERT_EQ(o.result.completion_tokens, kTokens);
      };
      auto tokens = std::make_shared<std::vector<std::int32_t>>();
      req.on_token = [tokens, &bins, m = spec.modulus](const engine::TokenEvent& e) {
        tokens->push_back(e.id);
        if (tokens->size() == kTokens) {
          int key = (*tokens)[1];
          if (m > 0) {
            key = 0;
            for (int i = 1; i < kTokens; ++i) key = key * m + (*tokens)[static_cast<std::size_t>(i)] % m;
          }
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
// cells - 1 degrees of freedom. Returns the p-value. Cells with fewer than `pool` counts in
// both samples together are pooled into one cell (the chi-square approximation needs
// populated cells).
double two_sample_p(const std::map<int, int>& a, const std::map<int, int>& b, int* cells, int pool = 0) {
  std::map<int, std::pair<int, int>> joint;
  for (auto [k, n] : a) joint[k].first = n;
  for (auto [k, n] : b) joint[k].second = n;
  if (pool > 0) {
    std::pair<int, int> rest{0, 0};
    for (auto it = joint.begin(); it != joint.end();)
      if (it->second.first + it->second.second < pool) {
        rest.first += it->second.first, rest.second += it->second.second;
        it = joint.erase(it);
      } else {
        ++it;
      }
    if (rest.first + rest.second > 0) joint[-1] = rest;
  }
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

// The Gemma 4 assistant drafter (engine/assistant_drafter.h) under sampling draws each draft
// from its own q (its logits after the request's temperature and truncation) and states that
// q through distribution(j). The real tiny assistant on the tiny model, k = 3, against plain
// sampling: a two-sample chi-square over the first verified token's id (t1: every draft
// round's row 0; cells under 20 counts pooled), p >= 1e-3. (The residue bins above cannot
// see a wrong q here: at temperature 1.5 the random target and assistant put their mass on
// different tokens, and a wrong rule moves mass between a few of them.) The same drafter with q
// mis-stated must fail it: a wrapper returns a wrong q while the drafts are still drawn
// from the true one. (A q stated one-hot at the drawn token is NOT a mis-statement the rule
// can notice: min(1, p(d)/1) acceptance and the residual p without d give p for any d, which
// is why drafters proposing with certainty need no distribution; the wrapper checks that too.)
namespace {

constexpr float kTemperature = 1.5f;

enum class Stated { truth, one_hot, uniform, other_step, wrong_temperature };

class StatedAssistant final : public engine::Drafter {
 public:
  StatedAssistant(std::unique_ptr<engine::AssistantDrafter> d, Stated how) : d_(std::move(d)), how_(how) {}
  bool wants_target_state() const override { return true; }
  void set_target_state(const TargetState& s) override { d_->set_target_state(s); }
  void propose(std::span<const std::int32_t> prompt, std::span<const std::int32_t> generated, int max,
               std::vector<std::int32_t>& out) override {
    const std::size_t before = out.size();
    d_->propose(prompt, generated, max, out);
    drafts_.assign(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
  }
  std::span<const float> distribution(std::size_t j) const override {
    const std::span<const float> q = d_->distribution(j);
    if (q.empty() || how_ == Stated::truth) return q;
    fake_.assign(q.size(), 0.0f);
    switch (how_) {
      case Stated::one_hot: fake_[static_cast<std::size_t>(drafts_[j])] = 1.0f; break;
      case Stated::uniform: std::fill(fake_.begin(), fake_.end(), 1.0f / static_cast<float>(q.size())); break;
      case Stated::other_step: {  // an off-by-one: another step's q (mixed with 10 % of the true one
        // so the draft keeps a probability above 0)
        const std::span<const float> other = d_->distribution(j > 0 ? j - 1 : j + 1);
        if (other.empty()) return q;
        for (std::size_t i = 0; i < q.size(); ++i) fake_[i] = 0.9f * other[i] + 0.1f * q[i];
        break;
      }
      case Stated::wrong_temperature: {  // q ~ exp(l / T): q^T normalised is the softmax at
        // temperature 1, as if the request's temperature were forgotten
        double sum = 0;
        for (std::size_t i = 0; i < q.size(); ++i) sum += fake_[i] = static_cast<float>(std::pow(double(q[i]), double(kTemperature)));
        for (float& v : fake_) v = static_cast<float>(v / sum);
        break;
      }
      case Stated::truth: break;
    }
    return fake_;
  }

 private:
  std::unique_ptr<engine::AssistantDrafter> d_;
  Stated how_;
  std::vector<std::int32_t> drafts_;
  mutable std::vector<float> fake_;
};

const fs::path& tiny_assistant_dir() {
  static const fs::path dir = [] {
    const fs::path d = model_dir() / "assistant";
    model::testing::write_test_assistant(d, {.preset = "tiny", .seed = 9});
    return d;
  }();
  return dir;
}

}  // namespace

TEST(SpeculativeSampling, AssistantDrafterKeepsTheSamplingDistribution) {
  engine::Engine engine({.model_dir = model_dir(), .threads = 2, .weights = model::WeightFormat::q4_0});
  const auto assistant = engine::load_assistant(engine, tiny_assistant_dir().string());
  const BinSpec bins{.temperature = kTemperature, .modulus = 0};
  constexpr int kRuns = 4000;
  const auto plain = sample_bins(engine, {}, 1000001, kRuns, nullptr, bins);
  auto with = [&](Stated how, engine::BatchStats* stats) {
    engine::DraftParams spec;
    spec.source = engine::DraftSource::external;
    spec.max_tokens = 3;
    // External drafters get no sampling parameters: the wrapper's AssistantDrafter is given
    // the request's (all runs share temperature; the seed is per request, so each drafter
    // is seeded from a counter here, as the scheduler would from the request seed).
    auto seed = std::make_shared<std::atomic<std::uint64_t>>(1);
    spec.make_external = [&engine, assistant, how, seed, t = bins.temperature] {
      sampling::SamplerParams sp;
      sp.temperature = t;
      sp.seed = (*seed)++;
      return std::make_unique<StatedAssistant>(std::make_unique<engine::AssistantDrafter>(assistant, engine.model(), sp),
                                               how);
    };
    return sample_bins(engine, spec, 1, kRuns, stats, bins);
  };
  // must: 1 must pass, -1 must fail, 0 printed only (measured: the off-by-one q gave p = 0.04
  // and is not asserted; this binning cannot be relied on to see every wrong q).
  struct Row {
    Stated how;
    const char* name;
    int must;
  };
  for (const Row& r : {Row{Stated::truth, "true q", 1}, Row{Stated::one_hot, "one-hot q", 1},
                       Row{Stated::uniform, "uniform q", -1}, Row{Stated::other_step, "another step's q", 0},
                       Row{Stated::wrong_temperature, "q at temperature 1", 0}}) {
    // The printed-only rows assert nothing; at -O0 under ASan each costs ~15 s of CI's longest test.
    if (r.must == 0 && ringlm::testing::kAddressSanitizer) continue;
    engine::BatchStats stats;
    const auto drafted = with(r.how, &stats);
    ASSERT_GT(stats.drafted, 1000u) << r.name;
    const double share = static_cast<double>(stats.accepted) / static_cast<double>(stats.drafted);
    int cells = 0;
    const double p = two_sample_p(drafted, plain, &cells, 20);
    std::printf("assistant drafter, %s: p = %.4g over %d cells, drafted %llu, accepted %.3f\n", r.name, p, cells,
                static_cast<unsigned long long>(stats.drafted), share);
    EXPECT_GT(cells, 20) << r.name;
    if (r.how == Stated::truth) EXPECT_GT(stats.accepted, 200u) << r.name << ": the acceptance branch must run often";
    if (r.must > 0) EXPECT_GE(p, 1e-3) << r.name << ": speculative sampling changed the distribution";
    if (r.must < 0) EXPECT_LT(p, 1e-3) << r.name << ": the test cannot tell a mis-stated q";
  }
}

// Sampled drafts are reproducible per request seed: the drafter's own generator is seeded
// from it (through a fixed mix, so it is not the target sampler's stream), and a greedy
// request drafts the argmax with certainty (no distribution).
TEST(SpeculativeSampling, AssistantDrafterSeedsItsDraftsFromTheRequest) {
  EXPECT_NE(engine::AssistantDrafter::draft_seed(7), 7u);
  EXPECT_NE(engine::AssistantDrafter::draft_seed(7), engine::AssistantDrafter::draft_seed(8));
  engine::Engine engine({.model_dir = model_dir(), .threads = 2, .weights = model::WeightFormat::q4_0});
  const auto assistant = engine::load_assistant(engine, tiny_assistant_dir().string());
  model::Session session(engine.model(), {.context_tokens = 64});
  const std::vector<std::int32_t> prompt = {310, 420, 333, 512, 601};
  std::vector<std::int64_t> pos(prompt.size() - 1);
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int64_t>(i);
  session.prefill(std::span(prompt).first(pos.size()), pos);
  const std::vector<float> hidden(session.head_input().begin(), session.head_input().end());
  auto round = [&](const sampling::SamplerParams& sp, std::vector<std::vector<float>>* qs) {
    engine::AssistantDrafter d(assistant, engine.model(), sp);
    d.set_target_state({&session, prompt.back(), static_cast<std::int64_t>(pos.size()), hidden});
    std::vector<std::int32_t> out;
    d.propose(prompt, {}, 4, out);
    if (qs)
      for (std::size_t j = 0; j < out.size(); ++j) {
        const auto q = d.distribution(j);
        qs->emplace_back(q.begin(), q.end());
      }
    return out;
  };
  std::vector<std::vector<float>> qs;
  sampling::SamplerParams sp;
  sp.temperature = 2.0f;
  sp.top_k = 50;
  sp.seed = 3;
  const auto a = round(sp, &qs);
  EXPECT_EQ(round(sp, nullptr), a) << "the same seed drafts the same tokens";
  ASSERT_EQ(qs.size(), 4u);
  for (std::size_t j = 0; j < qs.size(); ++j) {
    double sum = 0;
    int support = 0;
    for (float v : qs[j]) sum += v, support += v > 0;
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_EQ(support, 50) << "top_k applies to q";
    EXPECT_GT(qs[j][static_cast<std::size_t>(a[j])], 0.0f) << "the draft is in q's support";
  }
  bool differs = false;
  for (std::uint64_t seed = 4; seed < 12 && !differs; ++seed) {
    sp.seed = seed;
    differs = round(sp, nullptr) != a;
  }
  EXPECT_TRUE(differs) << "another seed drafts other tokens";
  sampling::SamplerParams greedy;
  engine::AssistantDrafter g(assistant, engine.model(), greedy);
  g.set_target_state({&session, prompt.back(), static_cast<std::int64_t>(pos.size()), hidden});
  std::vector<std::int32_t> out;
  g.propose(prompt, {}, 4, out);
  EXPECT_TRUE(g.distribution(0).empty()) << "greedy drafts are proposed with certainty";
}
