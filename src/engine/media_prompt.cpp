#include "engine/media_prompt.h"

#include <algorithm>
#include <chrono>
#include <string_view>
#include <utility>

#include "tokenizer/plain_text.h"
#include "util/error.h"
#include "vision/image_preprocess.h"

namespace ringlm::engine {

const vision::VisionTower& MediaEncoder::vision() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!vision_) {
    const auto dir = engine_.options().model_dir;
    const auto& mmproj = engine_.options().mmproj;
    if (mmproj.empty() && !std::filesystem::is_directory(dir))
      fail(dir.string(), ": images need a checkpoint directory with a vision tower, or --mmproj FILE (this model "
           "file carries none)");
    vision_ = vision::VisionTower::load(dir, engine_.options().threads, mmproj);
    if (!vision_ && !mmproj.empty())
      fail(mmproj.string(), ": this mmproj has no vision tower (no gemma4v projector), so it cannot take images");
    if (!vision_) fail(dir.string(), ": this checkpoint has no vision tower (config.json has no vision_config), so it cannot take images");
    vision_->set_reference_attention(engine_.options().reference_attention);
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
    const auto& mmproj = engine_.options().mmproj;
    if (mmproj.empty() && !std::filesystem::is_directory(dir))
      fail(dir.string(), ": audio needs a checkpoint directory with an audio tower, or --mmproj FILE (this model "
           "file carries none)");
    audio_ = audio::AudioTower::load(dir, engine_.options().threads, mmproj);
    if (!audio_ && !mmproj.empty())
      fail(mmproj.string(), ": this mmproj has no audio tower (no gemma4a projector), so it cannot take audio");
    if (!audio_) fail(dir.string(), ": this checkpoint has no audio tower (config.json has no audio_config), so it cannot take audio");
    if (audio_->config().text_hidden_size != engine_.model()->config().hidden_size)
      fail(dir.string(), ": the audio embedder projects to ", audio_->config().text_hidden_size,
           " but the text model's hidden size is ", engine_.model()->config().hidden_size);
  }
  return *audio_;
}

MediaPrompt MediaEncoder::build(const std::string& rendered, const std::vector<vision::RgbImage>& images, int budget,
                                bool add_bos) {
  return build(chat::MarkedPrompt{rendered, {}}, images, {}, budget, add_bos);
}

MediaPrompt MediaEncoder::build(const std::string& rendered, const std::vector<vision::RgbImage>& images,
                                const std::vector<audio::AudioClip>& audios, int budget, bool add_bos) {
  return build(chat::MarkedPrompt{rendered, {}}, images, audios, budget, add_bos);
}

MediaPrompt MediaEncoder::build(const chat::MarkedPrompt& prompt, const std::vector<vision::RgbImage>& images,
                                int budget, bool add_bos) {
  return build(prompt, images, {}, budget, add_bos);
}

MediaPrompt MediaEncoder::build_chat(const chat::ChatRequest& request, bool trust_control_tokens,
                                     const std::vector<vision::RgbImage>& images, int budget) {
  return build_chat(request, trust_control_tokens, images, {}, budget);
}

MediaPrompt MediaEncoder::build_chat(const chat::ChatRequest& request, bool trust_control_tokens,
                                     const std::vector<vision::RgbImage>& images,
                                     const std::vector<audio::AudioClip>& audios, int budget) {
  const chat::ChatTemplate* tmpl = engine_.chat_template();
  if (tmpl == nullptr) fail(engine_.options().model_dir.string(), ": the model directory has no chat template");
  return build(chat::render_marked(*tmpl, engine_.tokenizer(), request, trust_control_tokens), images, audios, budget);
}

namespace {

bool starts_in_plain(std::size_t at, const std::vector<TextRange>& plain) {
  for (const TextRange& r : plain)
    if (at >= r.begin && at < r.end) return true;
  return false;
}

// Appends the ids of text[begin, end), the parts of it inside `plain` tokenized as plain text.
void encode_piece(const Tokenizer& tok, const std::string& text, std::size_t begin, std::size_t end,
                  const std::vector<TextRange>& plain, std::vector<std::int32_t>& out) {
  std::vector<TextRange> local;
  for (const TextRange& r : plain) {
    const std::size_t b = std::max(r.begin, begin), e = std::min(r.end, end);
    if (b < e) local.push_back({b - begin, e - begin});
  }
  encode_with_plain_ranges(tok, std::string_view(text).substr(begin, end - begin), local, out);
}

}  // namespace

MediaPrompt MediaEncoder::build(const chat::MarkedPrompt& prompt, const std::vector<vision::RgbImage>& images,
                                const std::vector<audio::AudioClip>& audios, int budget, bool add_bos) {
  MediaPrompt out;
  const Tokenizer& tok = engine_.tokenizer();
  const std::string& rendered = prompt.text;
  // Split at the template's placeholders first (never at one inside user text), so user text
  // can never be mistaken for one by position.
  const std::string iph = kImagePlaceholder, aph = kAudioPlaceholder;
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  std::vector<bool> is_audio;  // the kind of the placeholder after pieces[i]
  std::size_t from = 0;
  for (std::size_t at = from;;) {
    const std::size_t i_at = rendered.find(iph, at), a_at = rendered.find(aph, at);
    const std::size_t next = std::min(i_at, a_at);
    if (next == std::string::npos) break;
    const bool audio_ph = next == a_at;
    at = next + 1;
    if (starts_in_plain(next, prompt.plain)) continue;
    pieces.emplace_back(from, next);
    is_audio.push_back(audio_ph);
    from = next + (audio_ph ? aph.size() : iph.size());
    at = from;
  }
  pieces.emplace_back(from, rendered.size());
  std::size_t n_image_ph = 0, n_audio_ph = 0;
  for (bool a : is_audio) ++(a ? n_audio_ph : n_image_ph);
  if (n_image_ph != images.size())
    fail("the prompt has ", n_image_ph, " image placeholder", n_image_ph == 1 ? "" : "s", " (", iph, ") but ",
         images.size(), " image", images.size() == 1 ? " was" : "s were", " given");
  if (n_audio_ph != audios.size())
    fail("the prompt has ", n_audio_ph, " audio placeholder", n_audio_ph == 1 ? "" : "s", " (", aph, ") but ",
         audios.size(), " audio clip", audios.size() == 1 ? " was" : "s were", " given");
  if (add_bos) {
    if (tok.bos_id() < 0) fail("the tokenizer has no <bos> token to start the prompt with");
    out.ids.push_back(tok.bos_id());
  }
  if (is_audio.empty()) {
    encode_piece(tok, rendered, 0, rendered.size(), prompt.plain, out.ids);
    return out;
  }
  auto emb = std::make_shared<PromptEmbeddings>();
  emb->hidden = engine_.model()->config().hidden_size;
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t next_image = 0, next_audio = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    encode_piece(tok, rendered, pieces[i].first, pieces[i].second, prompt.plain, out.ids);
    if (i == is_audio.size()) break;
    if (is_audio[i]) append_audio(out, *emb, audios[next_audio++]);
    else append_image(out, *emb, images[next_image++], budget);
  }
  out.encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.embeddings = std::move(emb);
  return out;
}

MediaPrompt MediaEncoder::expand(const std::vector<std::int32_t>& ids, const std::vector<vision::RgbImage>& images,
                                 const std::vector<int>& budgets) {
  return expand(ids, images, budgets, {});
}

MediaPrompt MediaEncoder::expand(const std::vector<std::int32_t>& ids, const std::vector<vision::RgbImage>& images,
                                 const std::vector<int>& budgets, const std::vector<audio::AudioClip>& audios) {
  MediaPrompt out;
  if (images.empty() && audios.empty()) {
    out.ids = ids;
    return out;
  }
  // A tower is loaded only when its media is given: a text+image request never needs the
  // audio tower (and works on a checkpoint without one). Ids of a kind not given stay as
  // they are: with control tokens kept plain, no request text can produce them.
  const std::int32_t image_id = images.empty() ? -1 : vision().config().image_token_id;
  const std::int32_t audio_id = audios.empty() ? -1 : audio().config().audio_token_id;
  auto count_of = [&](std::int32_t id) {
    return static_cast<std::size_t>(std::count(ids.begin(), ids.end(), id));
  };
  if (!images.empty() && count_of(image_id) != images.size())
    fail("the prompt has ", count_of(image_id), " image placeholder", count_of(image_id) == 1 ? "" : "s", " but ",
         images.size(), " image", images.size() == 1 ? " was" : "s were", " given");
  if (!audios.empty() && count_of(audio_id) != audios.size())
    fail("the prompt has ", count_of(audio_id), " audio placeholder", count_of(audio_id) == 1 ? "" : "s", " but ",
         audios.size(), " audio clip", audios.size() == 1 ? " was" : "s were", " given");
  auto emb = std::make_shared<PromptEmbeddings>();
  emb->hidden = engine_.model()->config().hidden_size;
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t next_image = 0, next_audio = 0;
  for (const std::int32_t id : ids) {
    if (id == image_id) {
      append_image(out, *emb, images[next_image], next_image < budgets.size() ? budgets[next_image] : 0);
      ++next_image;
    } else if (id == audio_id) {
      append_audio(out, *emb, audios[next_audio++]);
    } else {
      out.ids.push_back(id);
    }
  }
  out.encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.embeddings = std::move(emb);
  return out;
}

void MediaEncoder::place(MediaPrompt& out, PromptEmbeddings& emb, std::int32_t open, const std::vector<float>& rows,
                         std::int32_t close) const {
  const int H = emb.hidden;
  const int n = static_cast<int>(rows.size() / static_cast<std::size_t>(H));
  out.ids.push_back(open);
  for (int t = 0; t < n; ++t) {
    emb.positions.push_back(static_cast<std::int64_t>(out.ids.size()));
    // The pad id: transformers looks the media positions up as pad for the per-layer
    // embeddings (and the token embedding it then replaces).
    out.ids.push_back(engine_.model()->config().pad_token_id);
  }
  emb.rows.insert(emb.rows.end(), rows.begin(), rows.end());
  out.ids.push_back(close);
}

void MediaEncoder::append_image(MediaPrompt& out, PromptEmbeddings& emb, const vision::RgbImage& image, int budget) {
  const vision::VisionTower& tower = vision();
  const vision::VisionConfig& vc = tower.config();
  const vision::PatchGrid grid = vision::preprocess_image(image, vc, budget > 0 ? budget : vc.default_soft_tokens);
  std::vector<float> rows;
  {
    std::lock_guard<std::mutex> lock(encode_mu_);  // the towers' thread pools are not reentrant
    rows = tower.encode(grid);
  }
  place(out, emb, vc.boi_token_id, rows, vc.eoi_token_id);
  out.image_tokens += grid.soft_tokens();
}

void MediaEncoder::append_audio(MediaPrompt& out, PromptEmbeddings& emb, const audio::AudioClip& clip) {
  const audio::AudioTower& tower = audio();
  const audio::AudioConfig& ac = tower.config();
  const std::vector<float> samples =
      clip.rate == ac.sampling_rate ? clip.samples : audio::resample(clip.samples, clip.rate, ac.sampling_rate, clip.source);
  const audio::MelFeatures feat = audio::log_mel_features(samples, ac, clip.source);
  std::vector<float> rows;
  {
    std::lock_guard<std::mutex> lock(encode_mu_);
    rows = tower.encode(feat);
  }
  place(out, emb, ac.boa_token_id, rows, ac.eoa_token_id);
  out.audio_tokens += static_cast<int>(rows.size() / static_cast<std::size_t>(emb.hidden));
}

}  // namespace ringlm::engine
