#include "tokenizer/gguf_tokenizer_loader.h"

#include <algorithm>
#include <memory>

#include "util/error.h"

namespace ringlm {

TokenizerParts tokenizer_parts_from_gguf(const io::GgufTokenizerData& d, const std::string& source) {
  if (d.model != "gemma4")
    fail(source, ": tokenizer.ggml.model is '", d.model, "'; ringlm builds only 'gemma4' tokenizers from GGUF");
  TokenizerParts p;
  const io::GgufTokenizerData* owned = &d;
  const auto n = static_cast<std::int32_t>(owned->tokens.size());
  p.vocab.reserve(owned->tokens.size());
  for (std::int32_t id = 0; id < n; ++id) p.vocab.emplace_back(owned->tokens[static_cast<std::size_t>(id)], id);

  p.merges.reserve(owned->merges.size());
  for (std::size_t k = 0; k < owned->merges.size(); ++k) {
    const std::string_view m = owned->merges[k];
    // The separator is the first space after the first byte (a piece never contains a
    // space: spaces are "▁" by the time BPE runs).
    const auto sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
    if (sp == std::string_view::npos || sp + 1 >= m.size())
      fail(source, ": tokenizer.ggml.merges entry ", k, " ('", m, "') is not two pieces separated by a space");
    p.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
  }

  using T = io::GgufTokenType;
  for (std::int32_t id = 0; id < n && !owned->token_types.empty(); ++id) {
    const auto type = static_cast<T>(owned->token_types[static_cast<std::size_t>(id)]);
    if (type != T::Control && type != T::Unknown && type != T::UserDefined) continue;
    AddedToken a;
    a.content = owned->tokens[static_cast<std::size_t>(id)];
    a.id = id;
    a.special = type != T::UserDefined;
    p.added_tokens.push_back(std::move(a));
  }

  if (d.unk_id) p.unk_token = owned->tokens[static_cast<std::size_t>(*d.unk_id)];
  else if (std::find(owned->tokens.begin(), owned->tokens.end(), "<unk>") != owned->tokens.end()) p.unk_token = "<unk>";
  p.byte_fallback = true;
  p.fuse_unk = true;

  const std::string space = " ", metaspace = "\xe2\x96\x81";  // U+2581
  NormalizerStep norm;
  norm.kind = NormalizerStep::Kind::kReplace;
  norm.pattern = space;
  norm.content = metaspace;
  p.normalizer.push_back(norm);
  PreTokenizerStep split;  // as in Gemma's tokenizer.json (a no-op once spaces are "▁")
  split.kind = PreTokenizerStep::Kind::kSplit;
  split.pattern = space;
  split.behavior = SplitBehavior::kMergedWithPrevious;
  p.pre_tokenizer.push_back(split);
  DecoderStep unescape;
  unescape.kind = DecoderStep::Kind::kReplace;
  unescape.pattern = metaspace;
  unescape.content = space;
  DecoderStep bytes;
  bytes.kind = DecoderStep::Kind::kByteFallback;
  DecoderStep fuse;
  fuse.kind = DecoderStep::Kind::kFuse;
  p.decoder = {unescape, bytes, fuse};

  if (d.bos_id) p.bos_id = *d.bos_id;
  auto add_eos = [&](std::int32_t id) {
    if (std::find(p.eos_ids.begin(), p.eos_ids.end(), id) == p.eos_ids.end()) p.eos_ids.push_back(id);
  };
  if (d.eos_id) add_eos(*d.eos_id);
  for (const char* stop : {"<turn|>", "<|tool_response>"}) {
    auto it = std::find(owned->tokens.begin(), owned->tokens.end(), stop);
    if (it != owned->tokens.end()) add_eos(static_cast<std::int32_t>(it - owned->tokens.begin()));
  }
  p.add_bos_default = d.add_bos;
  return p;
}

Tokenizer load_gguf_tokenizer(const io::GgufFile& file) {
  return Tokenizer::from_parts(tokenizer_parts_from_gguf(io::gguf_tokenizer_data(file), file.path()));
}

Tokenizer load_gguf_tokenizer(const std::filesystem::path& path) {
  const io::GgufFile file(path);
  return load_gguf_tokenizer(file);
}

}  // namespace ringlm
