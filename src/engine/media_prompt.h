// Images and audio in a prompt, the way transformers' Gemma4Processor places them: the chat
// template renders each image content part as one "<|image|>" and each audio part as one
// "<|audio|>"; an image placeholder becomes "<|image>" + n x "<|image|>" + "<image|>", an
// audio one "<|audio>" + n x "<|audio|>" + "<audio|>" (n = the soft-token count of that
// image or clip), the text is tokenized, and the n positions receive the tower's soft-token
// embeddings (their ids become the pad id, whose per-layer embedding row Gemma 4 uses).
//
//   engine::MediaEncoder media(engine);                          // loads towers on first use
//   auto p = media.build_chat(request, false, images, audios);    // ids + soft-token rows
//   params.prompt_embeddings = p.embeddings;  gen.generate(p.ids, params, cb);
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chat/user_text.h"
#include "audio/audio_decode.h"
#include "audio/audio_tower.h"
#include "engine/engine.h"
#include "engine/generation.h"
#include "vision/image_decode.h"
#include "vision/vision_tower.h"

namespace ringlm::engine {

struct MediaPrompt {
  std::vector<std::int32_t> ids;
  std::shared_ptr<const PromptEmbeddings> embeddings;  // null when there are no images or audio
  int image_tokens = 0;                                // soft tokens over all images
  int audio_tokens = 0;                                // soft tokens over all audio clips
  double encode_seconds = 0.0;
};

class MediaEncoder {
 public:
  explicit MediaEncoder(const Engine& engine) : engine_(engine) {}

  // The checkpoint's vision tower (loaded once); throws ringlm::Error naming the model
  // when it has none (a text-only checkpoint or a format that does not carry it).
  const vision::VisionTower& vision();
  // The checkpoint's audio tower, likewise.
  const audio::AudioTower& audio();

  // Tokenizes `rendered` (a chat-template output, or raw text) with each "<|image|>"
  // placeholder expanded for the next image of `images`, in order, and encodes the images.
  // The number of placeholders must equal images.size(). budget 0: the processor's default.
  // add_bos: start with the tokenizer's BOS (raw prompts; the chat template writes its own).
  MediaPrompt build(const std::string& rendered, const std::vector<vision::RgbImage>& images, int budget = 0,
                    bool add_bos = false);
  // The same for a rendered chat prompt whose `plain` ranges are user text: those bytes are
  // tokenized as plain text (a control token or "<|image|>" written there stays text).
  MediaPrompt build(const chat::MarkedPrompt& prompt, const std::vector<vision::RgbImage>& images, int budget = 0,
                    bool add_bos = false);
  // A conversation rendered by the model's chat template, its strings kept plain text unless
  // `trust_control_tokens` (as Engine::encode_chat does for text-only prompts).
  MediaPrompt build_chat(const chat::ChatRequest& request, bool trust_control_tokens,
                         const std::vector<vision::RgbImage>& images, int budget = 0);
  // The same three with audio: each "<|audio|>" placeholder takes the next clip of `audios`,
  // in order (clips at any rate: they are resampled to the feature extractor's).
  MediaPrompt build(const std::string& rendered, const std::vector<vision::RgbImage>& images,
                    const std::vector<audio::AudioClip>& audios, int budget = 0, bool add_bos = false);
  MediaPrompt build(const chat::MarkedPrompt& prompt, const std::vector<vision::RgbImage>& images,
                    const std::vector<audio::AudioClip>& audios, int budget = 0, bool add_bos = false);
  MediaPrompt build_chat(const chat::ChatRequest& request, bool trust_control_tokens,
                         const std::vector<vision::RgbImage>& images, const std::vector<audio::AudioClip>& audios,
                         int budget = 0);

  // The same from ids already tokenized (chat::encode_chat, which keeps user text plain):
  // each image token id the template wrote (the config's image_token_id) is expanded for the
  // next image of `images`, each audio token id (audio_token_id) for the next clip of
  // `audios`; budgets[i] (0 or missing: the default) is image i's soft-token budget. The
  // count of each must equal the media given. Safe to call from several threads (encodes run
  // one at a time: the towers' thread pools are not reentrant).
  MediaPrompt expand(const std::vector<std::int32_t>& ids, const std::vector<vision::RgbImage>& images,
                     const std::vector<int>& budgets = {});
  MediaPrompt expand(const std::vector<std::int32_t>& ids, const std::vector<vision::RgbImage>& images,
                     const std::vector<int>& budgets, const std::vector<audio::AudioClip>& audios);

 private:
  // Appends boi + the soft-token positions + eoi for one image to out.ids / emb.
  void append_image(MediaPrompt& out, PromptEmbeddings& emb, const vision::RgbImage& image, int budget);
  // The same for one clip (boa ... eoa), resampled to the feature extractor's rate first.
  void append_audio(MediaPrompt& out, PromptEmbeddings& emb, const audio::AudioClip& clip);
  // open + one pad-id position per row of `rows` (its soft-token row) + close.
  void place(MediaPrompt& out, PromptEmbeddings& emb, std::int32_t open, const std::vector<float>& rows,
             std::int32_t close) const;

  const Engine& engine_;
  std::mutex mu_;
  std::mutex encode_mu_;
  std::unique_ptr<vision::VisionTower> vision_;
  std::unique_ptr<audio::AudioTower> audio_;
};

// The placeholders the chat template writes for one image and one audio clip.
inline constexpr const char* kImagePlaceholder = "<|image|>";
inline constexpr const char* kAudioPlaceholder = "<|audio|>";

}  // namespace ringlm::engine
