#include "engine/media_prompt.h"

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

MediaPrompt MediaEncoder::build(const std::string& rendered, const std::vector<vision::RgbImage>& images, int budget,
                                bool add_bos) {
  MediaPrompt out;
  const Tokenizer& tok = engine_.tokenizer();
  // Split at the placeholders first, so user text can never be mistaken for one by position.
  std::vector<std::string> pieces;
  std::size_t from = 0;
  const std::string ph = kImagePlaceholder;
  for (std::size_t at; (at = rendered.find(ph, from)) != std::string::npos; from = at + ph.size())
    pieces.push_back(rendered.substr(from, at - from));
  pieces.push_back(rendered.substr(from));
  const std::size_t n_placeholders = pieces.size() - 1;
  if (n_placeholders != images.size())
    fail("the prompt has ", n_placeholders, " image placeholder", n_placeholders == 1 ? "" : "s", " (", ph, ") but ",
         images.size(), " image", images.size() == 1 ? " was" : "s were", " given");
  EncodeOptions first;
  first.add_bos = add_bos;
  if (images.empty()) {
    out.ids = tok.encode(rendered, first);
    return out;
  }
  const vision::VisionTower& tower = vision();
  const vision::VisionConfig& vc = tower.config();
  const int H = vc.text_hidden_size;
  auto emb = std::make_shared<PromptEmbeddings>();
  emb->hidden = H;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto piece_ids = tok.encode(pieces[i], i == 0 ? first : EncodeOptions{});
    out.ids.insert(out.ids.end(), piece_ids.begin(), piece_ids.end());
    if (i == n_placeholders) break;
    const vision::PatchGrid grid = vision::preprocess_image(images[i], vc, budget > 0 ? budget : vc.default_soft_tokens);
    const std::vector<float> rows = tower.encode(grid);
    const int n = grid.soft_tokens();
    out.ids.push_back(vc.boi_token_id);
    for (int t = 0; t < n; ++t) {
      emb->positions.push_back(static_cast<std::int64_t>(out.ids.size()));
      // The pad id: transformers looks the image positions up as pad for the per-layer
      // embeddings (and the token embedding it then replaces).
      out.ids.push_back(engine_.model()->config().pad_token_id);
    }
    emb->rows.insert(emb->rows.end(), rows.begin(), rows.end());
    out.ids.push_back(vc.eoi_token_id);
    out.image_tokens += n;
  }
  out.encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.embeddings = std::move(emb);
  return out;
}

}  // namespace ringlm::engine
