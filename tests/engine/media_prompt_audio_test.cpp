// engine::MediaEncoder with audio, on the demo model (real Gemma 4 tokenizer and template)
// with a tiny random audio tower: the prompt ids equal what transformers' Gemma4Processor
// gives for the same rendered text (each "<|audio|>" expanded to "<|audio>" + n x
// "<|audio|>" + "<audio|>", n from the processor's rule, then tokenized), with the n audio
// positions carrying the pad id as Gemma4Model looks them up; the soft-token rows are the
// tower's, in order; a 44.1 kHz clip is resampled first; a wrong clip count is refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "audio/testing/test_audio_tower.h"
#include "engine/media_prompt.h"
#include "model/testing/test_checkpoint.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ringlm;

namespace {

const fs::path& demo_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("ringlm_media_audio_test_" + std::to_string(::getpid()));
    model::testing::TestCheckpointOptions o;
    o.preset = "demo";
    o.seed = 5;
    o.tokenizer_dir = fs::path(RINGLM_TOKENIZER_DIR);
    const int hidden =
        nlohmann::json::parse(model::testing::test_checkpoint_config_json(o))["text_config"]["hidden_size"].get<int>();
    o.extra_tensors = audio::testing::test_audio_tensors("tiny", hidden, o.dtype);
    o.extra_filler = [hidden](const io::TensorSpec& spec, const auto& write) {
      audio::testing::fill_test_audio_tensor("tiny", hidden, 5, spec, write);
    };
    model::testing::write_test_checkpoint(d, o);
    audio::testing::write_test_audio_config(d, "tiny");
    return d;
  }();
  return dir;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("ringlm_media_audio_test_" + std::to_string(::getpid())), ec);
  }
} cleanup;

audio::AudioClip tone(int rate, double seconds, double hz) {
  audio::AudioClip c;
  c.rate = c.source_rate = rate;
  c.channels = 1;
  c.source = "tone";
  for (int i = 0; i < static_cast<int>(rate * seconds); ++i)
    c.samples.push_back(static_cast<float>(0.3 * std::sin(2 * M_PI * hz * i / rate)));
  c.seconds = seconds;
  return c;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST(MediaPromptAudio, IdsAreTheProcessorsWithPadAtAudioPositions) {
  engine::Engine engine({.model_dir = demo_dir(), .threads = 2, .weights = model::WeightFormat::stored});
  engine::MediaEncoder media(engine);
  const audio::AudioConfig& ac = media.audio().config();
  chat::ChatRequest req;
  req.messages.push_back({{"role", "user"},
                          {"content", nlohmann::ordered_json::array({{{"type", "audio"}},
                                                                     {{"type", "text"}, {"text", "Transcribe:"}},
                                                                     {{"type", "input_audio"}}})}});
  req.add_generation_prompt = true;
  const std::string rendered = engine.render_chat(req);
  ASSERT_NE(rendered.find("<|audio|>Transcribe:<|audio|>"), std::string::npos) << rendered;

  const audio::AudioClip a = tone(16000, 1.3, 440), b = tone(44100, 0.8, 1000);
  const engine::MediaPrompt p = media.build(rendered, {}, {a, b});
  const int na = ac.soft_tokens_for(static_cast<long long>(a.samples.size()));
  const int nb = ac.soft_tokens_for(static_cast<long long>(std::ceil(b.samples.size() * 16000.0 / 44100)));
  EXPECT_EQ(na, 33);  // 1.3 s: 129 frames -> 65 -> 33
  EXPECT_EQ(nb, 20);  // 0.8 s: 79 frames -> 40 -> 20
  EXPECT_EQ(p.audio_tokens, na + nb);

  // What the processor tokenizes: the placeholders expanded in the text.
  std::string expanded = rendered;
  const std::string ph = "<|audio|>";
  std::size_t at = expanded.find(ph);
  expanded.replace(at, ph.size(), "<|audio>" + repeat(ph, na) + "<audio|>");
  at = expanded.find(ph, at + 8 + ph.size() * na + 8);
  expanded.replace(at, ph.size(), "<|audio>" + repeat(ph, nb) + "<audio|>");
  const std::vector<std::int32_t> want = engine.tokenizer().encode(expanded, {});  // the template wrote <bos>
  ASSERT_EQ(p.ids.size(), want.size());
  ASSERT_TRUE(p.embeddings);
  std::size_t k = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (want[i] == ac.audio_token_id) {
      EXPECT_EQ(p.ids[i], engine.model()->config().pad_token_id) << i;
      ASSERT_LT(k, p.embeddings->positions.size());
      EXPECT_EQ(p.embeddings->positions[k++], static_cast<std::int64_t>(i));
    } else {
      EXPECT_EQ(p.ids[i], want[i]) << i;
    }
  }
  EXPECT_EQ(k, static_cast<std::size_t>(na + nb));

  // The rows are the tower's for each clip, in order (the second after resampling).
  const std::vector<float> ra = media.audio().encode(audio::log_mel_features(a.samples, ac, "a"));
  const std::vector<float> rb = media.audio().encode(
      audio::log_mel_features(audio::resample(b.samples, 44100, 16000, "b"), ac, "b"));
  std::vector<float> rows = ra;
  rows.insert(rows.end(), rb.begin(), rb.end());
  EXPECT_EQ(p.embeddings->rows, rows);

  EXPECT_THROW(media.build(rendered, {}, {a}), Error);  // two placeholders, one clip
}

// serve's path: the chat template's ids (user text kept plain) with each audio id expanded,
// as MediaEncoder::expand does, equal the rendered-text path's ids and rows; clips and images
// may be mixed, each kind taken in order.
TEST(MediaPromptAudio, ExpandOnIdsEqualsTheRenderedPath) {
  engine::Engine engine({.model_dir = demo_dir(), .threads = 2, .weights = model::WeightFormat::stored});
  engine::MediaEncoder media(engine);
  chat::ChatRequest req;
  req.messages.push_back({{"role", "user"},
                          {"content", nlohmann::ordered_json::array({{{"type", "audio"}},
                                                                     {{"type", "text"}, {"text", "and <|audio|> then"}},
                                                                     {{"type", "audio"}}})}});
  req.add_generation_prompt = true;
  const audio::AudioClip a = tone(16000, 1.3, 440), b = tone(44100, 0.8, 1000);
  const engine::MediaPrompt want = media.build_chat(req, false, {}, {a, b});
  const engine::MediaPrompt got = media.expand(engine.encode_chat(req), {}, {}, {a, b});
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_EQ(got.audio_tokens, want.audio_tokens);
  ASSERT_TRUE(got.embeddings && want.embeddings);
  EXPECT_EQ(got.embeddings->positions, want.embeddings->positions);
  EXPECT_EQ(got.embeddings->rows, want.embeddings->rows);
  EXPECT_THROW(media.expand(engine.encode_chat(req), {}, {}, {a}), Error);  // two audio ids, one clip
  // Ids without any media stay as they are.
  EXPECT_EQ(media.expand(engine.encode_chat(req), {}, {}, {}).ids, engine.encode_chat(req));
}
