#include "tokenizer/gguf_parts.h"

#include "util/error.h"

namespace ringlm {

TokenizerParts parts_from_gguf(const GgufTokenizerMetadata& meta) {
  const std::string& m = meta.model;
  if (m != "gemma4" && m != "gemma3" && m != "gemma" && m != "llama") {
    fail_unsupported("tokenizer.ggml.model '", m, "' is not supported (only SentencePiece-style BPE: gemma4, gemma3, gemma, llama)");
  }
  if (meta.tokens.empty()) fail_model_file("tokenizer.ggml.tokens is empty");
  if (!meta.token_types.empty() && meta.token_types.size() != meta.tokens.size()) {
    fail_model_file("tokenizer.ggml.token_type has ", meta.token_types.size(), " entries for ", meta.tokens.size(), " tokens");
  }
  const auto n = static_cast<int64_t>(meta.tokens.size());
  auto check_id = [&](std::optional<int32_t> id, const char* key) {
    if (id && (*id < 0 || *id >= n)) fail_model_file("tokenizer.ggml.", key, " = ", *id, " is not a token id");
  };
  check_id(meta.bos_id, "bos_token_id");
  check_id(meta.eos_id, "eos_token_id");
  check_id(meta.unknown_id, "unknown_token_id");

  TokenizerParts p;
  if (meta.storage) p.storage.push_back(meta.storage);
  p.vocab.reserve(meta.tokens.size());
  for (int32_t id = 0; id < n; ++id) {
    const std::string_view piece = meta.tokens[id];
    const auto type = meta.token_types.empty() ? GgufTokenType::kNormal : static_cast<GgufTokenType>(meta.token_types[id]);
    p.vocab.emplace_back(piece, id);
    if ((type == GgufTokenType::kControl || type == GgufTokenType::kUserDefined) && !piece.empty()) {
      AddedToken t;
      t.content = std::string(piece);
      t.id = id;
      t.special = type == GgufTokenType::kControl;
      p.added_tokens.push_back(std::move(t));
    }
    if (type == GgufTokenType::kUnknown && !meta.unknown_id) p.unk_token = std::string(piece);
  }
  if (meta.unknown_id) p.unk_token = std::string(meta.tokens[*meta.unknown_id]);

  p.merges.reserve(meta.merges.size());
  for (size_t i = 0; i < meta.merges.size(); ++i) {
    const std::string_view text = meta.merges[i];
    const size_t sp = text.find(' ');
    if (sp == std::string_view::npos || text.find(' ', sp + 1) != std::string_view::npos) {
      fail_model_file("tokenizer.ggml.merges[", i, "] must be two pieces separated by one space");
    }
    p.merges.emplace_back(text.substr(0, sp), text.substr(sp + 1));
  }

  // The SentencePiece conventions, written out as the Hugging Face pipeline they stand for.
  const std::string marker = "\xE2\x96\x81";  // "▁"
  p.byte_fallback = true;
  p.fuse_unk = true;
  if (meta.add_space_prefix) p.normalizer.push_back({NormalizerStep::Kind::kPrepend, "", marker});
  p.normalizer.push_back({NormalizerStep::Kind::kReplace, " ", marker});
  DecoderStep replace;
  replace.kind = DecoderStep::Kind::kReplace;
  replace.pattern = marker;
  replace.content = " ";
  DecoderStep byte_fallback;
  byte_fallback.kind = DecoderStep::Kind::kByteFallback;
  DecoderStep fuse;
  fuse.kind = DecoderStep::Kind::kFuse;
  p.decoder = {replace, byte_fallback, fuse};
  if (meta.add_space_prefix) {
    DecoderStep strip;
    strip.kind = DecoderStep::Kind::kStrip;
    strip.content = " ";
    strip.start = 1;
    p.decoder.push_back(strip);
  }

  p.bos_id = meta.bos_id.value_or(-1);
  if (meta.eos_id) p.eos_ids.push_back(*meta.eos_id);
  for (int32_t e : meta.extra_eos_ids) {
    if (e < 0 || e >= n) fail_model_file("tokenizer.ggml: end-of-generation id ", e, " is not a token id");
    p.eos_ids.push_back(e);
  }
  p.add_bos_default = meta.add_bos;
  return p;
}

}  // namespace ringlm
