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
  return build(chat::MarkedPrompt{rendered, {}}, images, budget, add_bos);
}

MediaPrompt MediaEncoder::build_chat(const chat::ChatRequest& request, bool trust_control_tokens,
                                     const std::vector<vision::RgbImage>& images, int budget) {
  const chat::ChatTemplate* tmpl = engine_.chat_template();
  if (tmpl == nullptr) fail(engine_.options().model_dir.string(), ": the model directory has no chat template");
  return build(chat::render_marked(*tmpl, engine_.tokenizer(), request, trust_control_tokens), images, budget);
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
                                int budget, bool add_bos) {
  MediaPrompt out;
  const Tokenizer& tok = engine_.tokenizer();
  const std::string& rendered = prompt.text;
  // Split at the template's placeholders first (never at one inside user text), so user text
  // can never be mistaken for one by position.
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  std::size_t from = 0;
  const std::string ph = kImagePlaceholder;
  for (std::size_t at = rendered.find(ph); at != std::string::npos; at = rendered.find(ph, at + 1)) {
    if (starts_in_plain(at, prompt.plain)) continue;
    pieces.emplace_back(from, at);
    from = at + ph.size();
    at = from - 1;
  }
  pieces.emplace_back(from, rendered.size());
  const std::size_t n_placeholders = pieces.size() - 1;
  if (n_placeholders != images.size())
    fail("the prompt has ", n_placeholders, " image placeholder", n_placeholders == 1 ? "" : "s", " (", ph, ") but ",
         images.size(), " image", images.size() == 1 ? " was" : "s were", " given");
  if (add_bos) {
    if (tok.bos_id() < 0) fail("the tokenizer has no <bos> token to start the prompt with");
    out.ids.push_back(tok.bos_id());
  }
  if (images.empty()) {
    encode_piece(tok, rendered, 0, rendered.size(), prompt.plain, out.ids);
    return out;
  }
  auto emb = std::make_shared<PromptEmbeddings>();
  emb->hidden = vision().config().text_hidden_size;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    encode_piece(tok, rendered, pieces[i].first, pieces[i].second, prompt.plain, out.ids);
    if (i == n_placeholders) break;
    append_image(out, *emb, images[i], budget);
  }
  out.encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.embeddings = std::move(emb);
  return out;
}

MediaPrompt MediaEncoder::expand(const std::vector<std::int32_t>& ids, const std::vector<vision::RgbImage>& images,
                                 const std::vector<int>& budgets) {
  MediaPrompt out;
  if (images.empty()) {
    out.ids = ids;
    return out;
  }
  const vision::VisionConfig& vc = vision().config();
  const std::size_t n_placeholders =
      static_cast<std::size_t>(std::count(ids.begin(), ids.end(), static_cast<std::int32_t>(vc.image_token_id)));
  if (n_placeholders != images.size())
    fail("the prompt has ", n_placeholders, " image placeholder", n_placeholders == 1 ? "" : "s", " but ", images.size(),
         " image", images.size() == 1 ? " was" : "s were", " given");
  auto emb = std::make_shared<PromptEmbeddings>();
  emb->hidden = vc.text_hidden_size;
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t next = 0;
  for (const std::int32_t id : ids) {
    if (id != vc.image_token_id) {
      out.ids.push_back(id);
      continue;
    }
    append_image(out, *emb, images[next], next < budgets.size() ? budgets[next] : 0);
    ++next;
  }
  out.encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.embeddings = std::move(emb);
  return out;
}

void MediaEncoder::append_image(MediaPrompt& out, PromptEmbeddings& emb, const vision::RgbImage& image, int budget) {
  const vision::VisionTower& tower = vision();
  const vision::VisionConfig& vc = tower.config();
  const vision::PatchGrid grid = vision::preprocess_image(image, vc, budget > 0 ? budget : vc.default_soft_tokens);
  std::vector<float> rows;
  {
    std::lock_guard<std::mutex> lock(encode_mu_);
    rows = tower.encode(grid);
  }
  const int n = grid.soft_tokens();
  out.ids.push_back(vc.boi_token_id);
  for (int t = 0; t < n; ++t) {
    emb.positions.push_back(static_cast<std::int64_t>(out.ids.size()));
    // The pad id: transformers looks the image positions up as pad for the per-layer
    // embeddings (and the token embedding it then replaces).
    out.ids.push_back(engine_.model()->config().pad_token_id);
  }
  emb.rows.insert(emb.rows.end(), rows.begin(), rows.end());
  out.ids.push_back(vc.eoi_token_id);
  out.image_tokens += n;
}

}  // namespace ringlm::engine
