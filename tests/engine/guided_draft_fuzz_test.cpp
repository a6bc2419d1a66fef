// Guided decoding with drafts, fuzzed over the repository's schema set (tests/data/jsonschema/
// jsonschemabench, the JSONSchemaBench sample bench_grammar_test.sh runs): for each schema the
// strict compiler accepts, a drafter that mixes the plain run's tokens, corrupted copies and
// random vocabulary tokens drives the batched verify. Every emitted token must be one the
// grammar allows (replayed through a fresh matcher), a reply that ended by itself must be a
// complete value that parses and validates against the schema, and the whole output must be
// the plain run's (greedy and seeded sampling). Fixed seeds: the same draws every run.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

#include "engine/batch_scheduler.h"
#include "engine/generator.h"
#include "guided/matcher.h"
#include "guided/validator.h"
#include "model/testing/test_checkpoint.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ringlm;

namespace {

const fs::path& model_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("ringlm_guided_draft_fuzz_" + std::to_string(::getpid()));
    model::testing::TestCheckpointOptions o;
    o.preset = "tiny";
    o.seed = 17;
    o.tokenizer_dir = fs::path(RINGLM_TOKENIZER_DIR);
    model::testing::write_test_checkpoint(d, o);
    return d;
  }();
  return dir;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("ringlm_guided_draft_fuzz_" + std::to_string(::getpid())), ec);
  }
} cleanup;

// Proposes, per token: the recorded plain output's token (60 %), that token + 1 (a wrong but
// often allowed one, 15 %), or a random vocabulary token (25 %, mostly refused by the grammar).
class FuzzDrafter final : public engine::Drafter {
 public:
  FuzzDrafter(std::shared_ptr<const std::vector<std::int32_t>> rec, std::int32_t vocab, std::uint64_t seed)
      : rec_(std::move(rec)), vocab_(vocab), rng_(seed) {}
  void propose(std::span<const std::int32_t>, std::span<const std::int32_t> generated, int max,
               std::vector<std::int32_t>& out) override {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::uniform_int_distribution<std::int32_t> any(0, vocab_ - 1);
    const int n = std::uniform_int_distribution<int>(1, max)(rng_);
    for (int i = 0; i < n; ++i) {
      const std::size_t at = generated.size() + static_cast<std::size_t>(i);
      const std::int32_t t = at < rec_->size() ? (*rec_)[at] : any(rng_);
      const double r = u(rng_);
      out.push_back(r < 0.6 ? t : r < 0.75 ? (t + 1) % vocab_ : any(rng_));
    }
  }

 private:
  std::shared_ptr<const std::vector<std::int32_t>> rec_;
  std::int32_t vocab_;
  std::mt19937_64 rng_;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(GuidedDraftFuzz, DraftsNeverLeaveTheGrammarOverTheSchemaSet) {
  engine::Engine engine({.model_dir = model_dir(), .threads = 2, .weights = model::WeightFormat::q4_0});
  const std::int32_t vocab = engine.tokenizer().vocab_size();
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(RINGLM_TEST_DATA_DIR) / "jsonschema" / "jsonschemabench"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 100u);
  int compiled = 0, finished = 0, accepted = 0, drafted = 0;
  constexpr int kSchemas = 48;  // CI time: the first 48 that compile (of ~150)
  for (std::size_t fi = 0; fi < files.size() && compiled < kSchemas; ++fi) {
    const std::string schema_text = read_file(files[fi]);
    engine::GenerationParams params;
    params.json_schema = schema_text;
    params.max_tokens = 120;
    if (fi % 2) params.sampling.temperature = 1.0f, params.sampling.seed = fi;
    params.logprobs = true;
    std::shared_ptr<guided::GrammarIndex> grammar;
    try {
      grammar = engine.grammar_for(params);
    } catch (const Error&) {
      continue;  // outside what strict mode enforces exactly (other tests cover the refusal)
    }
    ++compiled;
    const std::string name = files[fi].filename().string();
    const std::vector<std::int32_t> prompt = {310 + static_cast<std::int32_t>(fi % 50), 420, 333, 512};
    engine::Generator plain(engine);
    std::vector<engine::TokenEvent> ref;
    const auto ref_result = plain.generate(prompt, params, [&](const engine::TokenEvent& e) {
      ref.push_back(e);
      return true;
    });
    auto rec = std::make_shared<std::vector<std::int32_t>>();
    for (const auto& e : ref) rec->push_back(e.id);
    params.draft.source = engine::DraftSource::external;
    params.draft.max_tokens = 1 + static_cast<int>(fi % 6);
    params.draft.make_external = [rec, vocab, fi] { return std::make_unique<FuzzDrafter>(rec, vocab, 1000 + fi); };
    engine::Generator gen(engine);  // hands the drafting request to a one-sequence scheduler
    std::vector<engine::TokenEvent> got;
    const auto result = gen.generate(prompt, params, [&](const engine::TokenEvent& e) {
      got.push_back(e);
      return true;
    });
    drafted += result.drafted_tokens;
    accepted += result.accepted_drafts;
    // Every emitted token is allowed where it was emitted.
    guided::Matcher m(grammar);
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_TRUE(m.accept(static_cast<std::uint32_t>(got[i].id))) << name << ": token " << i << " (" << got[i].id
                                                                     << ") is outside the grammar";
    // The plain output, token for token.
    ASSERT_EQ(got.size(), ref.size()) << name;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].id, ref[i].id) << name << " token " << i;
      EXPECT_EQ(got[i].logprob, ref[i].logprob) << name << " token " << i;
    }
    EXPECT_EQ(result.text, ref_result.text) << name;
    EXPECT_EQ(result.finish, ref_result.finish) << name;
    if (result.finish != engine::FinishReason::Stop) continue;  // cut by max_tokens: incomplete
    ++finished;
    EXPECT_TRUE(m.is_accepting()) << name << ": ended before the value was complete";
    const auto value = guided::Json::parse(result.text, nullptr, false);
    ASSERT_FALSE(value.is_discarded()) << name << ": not JSON: " << result.text;
    std::string why;
    EXPECT_TRUE(guided::Validator(guided::Json::parse(schema_text)).validate(value, &why)) << name << ": " << why;
  }
  std::printf("%d schemas compiled, %d replies complete, %d/%d drafted tokens accepted\n", compiled, finished, accepted,
              drafted);
  EXPECT_EQ(compiled, kSchemas);
  EXPECT_GT(finished, kSchemas / 4) << "too few replies ended by themselves to check their values";
  EXPECT_GT(accepted, 500) << "the drafts were hardly ever accepted: the verify path went untested";
  EXPECT_GT(drafted - accepted, 200) << "the drafts were hardly ever rejected";
}
