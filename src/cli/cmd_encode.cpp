// `ringlm encode`: runs one image through the checkpoint's vision tower, or one audio clip
// through its audio tower, and writes the projected soft-token embeddings (raw
// little-endian float32 [tokens][text hidden]), so the C++ encoders can be compared with an
// independent reference, like `ringlm logits`. --pixels-out also writes the processor's
// patches ([patches][patch^2 * 3] float32); --features-out the log-mel features
// ([frames][mels] float32) and --samples-out the decoded, resampled mono waveform.
#include <bit>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/environment.h"
#include "cli/hf_model.h"
#include "audio/audio_decode.h"
#include "audio/audio_features.h"
#include "audio/audio_tower.h"
#include "util/error.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"
#include "vision/vision_tower.h"

namespace {

static_assert(std::endian::native == std::endian::little, "ringlm encode assumes a little-endian host");

void write_floats(const std::string& path, const std::vector<float>& v) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) ringlm::fail(path, ": cannot create");
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  out.close();
  if (!out) ringlm::fail(path, ": write failed");
}

template <class Options>
void encode_audio(const std::string& dir, const Options& opt) {
  using namespace ringlm;
  const auto t0 = std::chrono::steady_clock::now();
  auto tower = audio::AudioTower::load(dir, opt.threads, opt.mmproj);
  if (!tower && !opt.mmproj.empty()) fail(opt.mmproj, ": this mmproj has no audio tower (no gemma4a projector)");
  if (!tower) fail(dir, ": this checkpoint has no audio tower (config.json has no audio_config)");
  const auto t1 = std::chrono::steady_clock::now();
  const audio::AudioConfig& c = tower->config();
  const audio::AudioClip clip = audio::read_audio_file(opt.audio, c.sampling_rate);
  const audio::MelFeatures feat = audio::log_mel_features(clip.samples, c, opt.audio);
  const auto t2 = std::chrono::steady_clock::now();
  if (!opt.samples_out.empty()) write_floats(opt.samples_out, clip.samples);
  if (!opt.features_out.empty()) write_floats(opt.features_out, feat.data);
  const std::vector<float> emb = tower->encode(feat);
  const auto t3 = std::chrono::steady_clock::now();
  write_floats(opt.out, emb);
  const auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  const int tokens = static_cast<int>(emb.size() / static_cast<std::size_t>(c.text_hidden_size));
  const nlohmann::ordered_json summary = {
      {"audio", opt.audio},          {"format", clip.format},       {"channels", clip.channels},
      {"sample_rate", clip.source_rate}, {"seconds", clip.seconds}, {"samples", clip.samples.size()},
      {"rate", clip.rate},           {"frames", feat.frames},       {"mels", feat.mels},
      {"tokens", tokens},            {"hidden", c.text_hidden_size}};
  std::printf("%s\n", summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::fprintf(stderr, "encode: %d soft tokens from %d mel frames (%.2f s); load %.3f s; decode+features %.3f s; encode %.3f s\n",
               tokens, feat.frames, clip.seconds, secs(t0, t1), secs(t1, t2), secs(t2, t3));
}

}  // namespace

RINGLM_COMMAND(encode) {
  struct Options {
    std::string model, hf, mmproj, image, audio, out, pixels_out, features_out, samples_out;
    int image_tokens = 0;
    int threads = 0;
  };
  auto opt = std::make_shared<Options>();
  auto* sub = app.add_subcommand("encode",
                                 "Write the projected soft-token embeddings of an image or audio clip (float32 [tokens][hidden])");
  ringlm::cli::add_hf_option(
      sub, opt->hf, sub->add_option("--model,-m", opt->model, "Checkpoint directory (default: the built-in demo model)"));
  sub->add_option("--mmproj", opt->mmproj, "Towers from a llama.cpp mmproj GGUF file (gemma4v/gemma4a) instead of the "
                  "model directory's; --model is then not needed")->check(CLI::ExistingFile);
  sub->add_option("--image", opt->image, "Image file: JPEG, PNG or WebP");
  sub->add_option("--audio", opt->audio, "Audio file: WAV, FLAC, OGG or MP3 (at most 30 s)");
  sub->add_option("--out", opt->out, "Output file: raw little-endian float32 [tokens][hidden]")->required();
  sub->add_option("--image-tokens", opt->image_tokens,
                  "Soft-token budget: 70, 140, 280, 560 or 1120 (default: the processor config's max_soft_tokens)");
  sub->add_option("--pixels-out", opt->pixels_out,
                  "Also write the preprocessed patches: raw float32 [patches][patch_size^2 * 3], in [0, 1]");
  sub->add_option("--features-out", opt->features_out,
                  "With --audio, also write the log-mel features: raw float32 [frames][mels]");
  sub->add_option("--samples-out", opt->samples_out,
                  "With --audio, also write the decoded mono waveform at the extractor's rate: raw float32");
  sub->add_option("--threads,-t", opt->threads, "Worker threads (default: all cores or RINGLM_THREADS)");
  sub->callback([opt] {
    using namespace ringlm;
    if (!opt->hf.empty()) {  // -hf: the repository's model, and its mmproj file unless --mmproj was given
      const auto m = cli::resolve_hf_model(opt->hf);
      opt->model = m.model.string();
      if (opt->mmproj.empty()) opt->mmproj = m.mmproj.string();
    }
    std::string dir = !opt->model.empty() || !opt->mmproj.empty() ? opt->model : cli::default_model_dir();
    if (dir.empty() && opt->mmproj.empty()) fail("encode: no --model given and no built-in demo model");
    if (opt->image.empty() == opt->audio.empty()) fail("encode: give exactly one of --image FILE or --audio FILE");
    if (!opt->audio.empty()) return encode_audio(dir, *opt);
    const auto t0 = std::chrono::steady_clock::now();
    auto tower = vision::VisionTower::load(dir, opt->threads, opt->mmproj);
    if (!tower && !opt->mmproj.empty()) fail(opt->mmproj, ": this mmproj has no vision tower (no gemma4v projector)");
    if (!tower) fail(dir, ": this checkpoint has no vision tower (config.json has no vision_config)");
    tower->set_reference_attention(cli::reference_attention_from_env());  // RINGLM_ATTENTION=reference: A/B
    const auto t1 = std::chrono::steady_clock::now();
    const int budget = opt->image_tokens > 0 ? opt->image_tokens : tower->config().default_soft_tokens;
    const vision::RgbImage image = vision::read_image_file(opt->image);
    const vision::PatchGrid grid = vision::preprocess_image(image, tower->config(), budget);
    const auto t2 = std::chrono::steady_clock::now();
    if (!opt->pixels_out.empty()) write_floats(opt->pixels_out, grid.pixels);
    const std::vector<float> emb = tower->encode(grid);
    const auto t3 = std::chrono::steady_clock::now();
    write_floats(opt->out, emb);
    const auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    const nlohmann::ordered_json summary = {
        {"image", opt->image},           {"format", image.format},
        {"width", image.width},          {"height", image.height},
        {"resized_width", grid.patches_w * grid.patch_size},
        {"resized_height", grid.patches_h * grid.patch_size},
        {"patches_w", grid.patches_w},   {"patches_h", grid.patches_h},
        {"tokens", grid.soft_tokens()},  {"hidden", tower->config().text_hidden_size},
        {"budget", budget}};
    std::printf("%s\n", summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    std::fprintf(stderr, "encode: %d soft tokens from %d patches; load %.3f s; decode+preprocess %.3f s; encode %.3f s\n",
                 grid.soft_tokens(), grid.num_patches(), secs(t0, t1), secs(t1, t2), secs(t2, t3));
  });
}
