// audio::AudioConfig: the soft-token count against the processor's own rule (the frame
// mask of a clip padded to 128 samples, subsampled twice as Gemma4Processor's
// replace_audio_token does), the released defaults, and refusals that name the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "audio/audio_config.h"
#include "audio/audio_features.h"
#include "util/error.h"

using namespace ringlm;

namespace {

const char* kConfig = R"({"text_config": {"hidden_size": 64}, "audio_config": {"hidden_size": 32,
  "num_attention_heads": 4, "num_hidden_layers": 2, "subsampling_conv_channels": [128, 8]}})";

// replace_audio_token's count, step by step: pad the clip to a multiple of 128 samples,
// mark frames whose last window sample is real audio, then twice keep every other entry.
int processor_count(long long n) {
  const long long padded = (n + 127) / 128 * 128, pad_left = 160, size = 321, hop = 160;
  const long long total = padded + pad_left;
  std::vector<int> mask;
  for (long long t = 0; (total - size) >= 0 && t <= (total - size) / hop; ++t) {
    const long long end = t * hop + size - 1;  // index into the left-padded clip
    mask.push_back(end >= pad_left && end - pad_left < n ? 1 : 0);
  }
  for (int i = 0; i < 2; ++i) {
    std::vector<int> half;
    for (std::size_t j = 0; j < mask.size(); j += 2) half.push_back(mask[j]);
    mask = half;
  }
  int sum = 0;
  for (int m : mask) sum += m;
  return sum;
}

}  // namespace

TEST(AudioConfig, TokenCountFollowsTheProcessor) {
  const auto c = audio::parse_audio_config(kConfig, "config.json");
  ASSERT_TRUE(c);
  for (long long n : {0LL, 100LL, 160LL, 161LL, 320LL, 321LL, 800LL, 1000LL, 16000LL, 16001LL, 57176LL, 479999LL,
                      480000LL})
    EXPECT_EQ(c->soft_tokens_for(n), processor_count(n)) << n << " samples";
  for (long long n = 0; n < 5000; n += 37) EXPECT_EQ(c->soft_tokens_for(n), processor_count(n)) << n << " samples";
  EXPECT_EQ(c->soft_tokens_for(480000), 750);  // 30 s: the processor's cap
  EXPECT_EQ(c->mel_frames_for(480000), 2999);
}

TEST(AudioConfig, ReleasedDefaults) {
  const auto c = audio::parse_audio_config(kConfig, "config.json");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->frame_length, 320);
  EXPECT_EQ(c->hop_length, 160);
  EXPECT_EQ(c->fft_length, 512);
  EXPECT_EQ(c->feature_size, 128);
  EXPECT_EQ(c->audio_token_id, 258881);
  EXPECT_EQ(c->boa_token_id, 256000);
  EXPECT_EQ(c->eoa_token_id, 258883);
  EXPECT_EQ(c->text_hidden_size, 64);
  EXPECT_EQ(c->head_dim(), 8);
  // The HTK bank: the lowest filter (0 to 27 Hz) falls between the first two FFT bins and is
  // all zero, as in transformers; every other filter is a triangle peaking in (0, 1].
  const auto bank = audio::htk_mel_filter_bank(*c);
  ASSERT_EQ(bank.size(), 257u * 128u);
  for (int m = 0; m < 128; ++m) {
    double peak = 0;
    for (int k = 0; k < 257; ++k) peak = std::max(peak, bank[k * 128 + m]);
    if (m == 0) EXPECT_EQ(peak, 0.0);
    else EXPECT_GT(peak, 0.0) << "filter " << m;
    EXPECT_LE(peak, 1.0) << "filter " << m;
  }
}

TEST(AudioConfig, NoAudioConfigIsNone) {
  EXPECT_FALSE(audio::parse_audio_config(R"({"text_config": {"hidden_size": 64}})", "config.json"));
  EXPECT_FALSE(audio::parse_audio_config(R"({"text_config": {"hidden_size": 64}, "audio_config": null})", "c"));
}

TEST(AudioConfig, RefusalsNameTheField) {
  auto expect_error = [](const std::string& config, const std::string& proc, const std::string& needle) {
    try {
      audio::parse_audio_config(config, "config.json", proc, "processor_config.json");
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(R"({"text_config": {"hidden_size": 64}, "audio_config": {"attention_context_left": 7}})", "",
               "config.json: field audio_config.attention_context_left: only 13");
  expect_error(R"({"text_config": {"hidden_size": 64}, "audio_config": {"hidden_act": "gelu"}})", "",
               "audio_config.hidden_act: only silu");
  expect_error(R"({"audio_config": {}})", "", "field text_config: missing");
  expect_error(kConfig, R"({"feature_extractor": {"dither": 0.1}})", "feature_extractor.dither: only 0");
  expect_error(kConfig, R"({"feature_extractor": {"frame_length": 400}})",
               "feature_extractor.frame_length: disagrees with frame_length_ms (320 samples)");
  expect_error(kConfig, R"({"feature_extractor": {"feature_extractor_type": "WhisperFeatureExtractor"}})",
               "only Gemma4AudioFeatureExtractor");
  expect_error(kConfig, R"({"feature_extractor": {}, "audio_ms_per_token": 20})", "audio_ms_per_token: only 40");
}
