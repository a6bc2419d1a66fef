#include "engine/media_prompt.h"

#include <algorithm>
#include <chrono>

#include "util/error.h"
#include "vision/image_preprocess.h"

namespace ringlm::engine {

const vision::VisionTower& MediaEncoder::vision() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!vision_) {
    const auto dir = engine_.options().model_dir;
    if (!std::filesystem::is_directory(dir))
      fail(dir.string(), ": images need a Hugging Face checkpoint directory with a vision tower (this model has none)");
    vision_ = vision::VisionTower::load(dir, engine_.options().threads);
    if (!vision_) fail(dir.string(), ": this checkpoint has no vision tower (config.json has no vision_config), so it cannot take images");
    if (vision_->config().text_hidden_size != engine_.model()->config().hidden_size)
      fail(dir.string(), ": the vision embedder projects to ", vision_->config().text_hidden_size,
           " but the text model's hidden size is ", engine_.model()->config().hidden_size);
  }
  return *vision_;
}

const audio::AudioTower& MediaEncoder::audio() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!audio_) {
    const auto dir = engine_.options().model_dir;
    if (!std::filesystem::is_directory(dir))
      fail(dir.string(), ": audio needs a Hugging Face checkpoint directory with an audio tower (this model has none)");
    audio_ = audio::AudioTower::load(dir, engine_.options().threads);
    if (!audio_) fail(dir.string(), ": this checkpoint has no audio tower (config.json has no audio_config), so it cannot take audio");
    if (audio_->config().text_hidden_size != engine_.model()->config().hidden_size)
      fail(dir.string(), ": the audio embedder projects to ", audio_->config().text_hidden_size,
           " but the text model's hidden size is ", engine_.model()->config().hidden_size);
  }
  return *audio_;
}

MediaPrompt MediaEncoder::build(const std::string& rendered, const std::vector<vision::RgbImage>& images, int budget,
                                bool add_bos) {
  return build(rendered, images, {}, budget, add_bos);
}

MediaPrompt MediaEncoder::build(const std::string& rendered, const std::vector<vision::RgbImage>& images,
                                const std::vector<audio::AudioClip>& audios, int budget, bool add_bos) {
  MediaPrompt out;
  const Tokenizer& tok = engine_.tokenizer();
  // Split at the placeholders first, so user text can never be mistaken for one by position.
  const std::string iph = kImagePlaceholder, aph = kAudioPlaceholder;
  std::vector<std::string> pieces;
  std::vector<bool> is_audio;  // the kind of the placeholder after pieces[i]
  std::size_t from = 0;
  for (;;) {
    const std::size_t i_at = rendered.find(iph, from), a_at = rendered.find(aph, from);
    const std::size_t at = std::min(i_at, a_at);
    if (at == std::string::npos) break;
    pieces.push_back(rendered.substr(from, at - from));
    is_audio.push_back(at == a_at);
    from = at + (at == a_at ? aph.size() : iph.size());
  }
  pieces.push_back(rendered.substr(from));
  std::size_t n_image_ph = 0, n_audio_ph = 0;
  for (bool a : is_audio) (a ? n_audio_ph : n_image_ph)++;
  if (n_image_ph != images.size())
    fail("the prompt has ", n_image_ph, " image placeholder", n_image_ph == 1 ? "" : "s", " (", iph, ") but ",
         images.size(), " image", images.size() == 1 ? " was" : "s were", " given");
  if (n_audio_ph != audios.size())
    fail("the prompt has ", n_audio_ph, " audio placeholder", n_audio_ph == 1 ? "" : "s", " (", aph, ") but ",
         audios.size(), " audio clip", audios.size() == 1 ? " was" : "s were", " given");
  EncodeOptions first;
  first.add_bos = add_bos;
  if (is_audio.empty()) {
    out.ids = tok.encode(rendered, first);
    return out;
  }
  const int H = engine_.model()->config().hidden_size;
  const std::int32_t pad = engine_.model()->config().pad_token_id;
  auto emb = std::make_shared<PromptEmbeddings>();
  emb->hidden = H;
  // Appends open + n pad-id positions (their soft-token rows) + close.
  auto place = [&](std::int32_t open, const std::vector<float>& rows, std::int32_t close) {
    const int n = static_cast<int>(rows.size() / static_cast<std::size_t>(H));
    out.ids.push_back(open);
    for (int t = 0; t < n; ++t) {
      emb->positions.push_back(static_cast<std::int64_t>(out.ids.size()));
      // The pad id: transformers looks the media positions up as pad for the per-layer
      // embeddings (and the token embedding it then replaces).
      out.ids.push_back(pad);
    }
    emb->rows.insert(emb->rows.end(), rows.begin(), rows.end());
    out.ids.push_back(close);
    return n;
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t next_image = 0, next_audio = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto piece_ids = tok.encode(pieces[i], i == 0 ? first : EncodeOptions{});
    out.ids.insert(out.ids.end(), piece_ids.begin(), piece_ids.end());
    if (i == is_audio.size()) break;
    if (is_audio[i]) {
      const audio::AudioTower& tower = audio();
      const audio::AudioConfig& ac = tower.config();
      const audio::AudioClip& clip = audios[next_audio++];
      const std::vector<float> samples = clip.rate == ac.sampling_rate
                                             ? clip.samples
                                             : audio::resample(clip.samples, clip.rate, ac.sampling_rate, clip.source);
      const audio::MelFeatures feat = audio::log_mel_features(samples, ac, clip.source);
      out.audio_tokens += place(ac.boa_token_id, tower.encode(feat), ac.eoa_token_id);
    } else {
      const vision::VisionTower& tower = vision();
      const vision::VisionConfig& vc = tower.config();
      const vision::PatchGrid grid =
          vision::preprocess_image(images[next_image++], vc, budget > 0 ? budget : vc.default_soft_tokens);
      out.image_tokens += place(vc.boi_token_id, tower.encode(grid), vc.eoi_token_id);
    }
  }
  out.encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.embeddings = std::move(emb);
  return out;
}

}  // namespace ringlm::engine
