#include "tokenizer/gguf_tokenizer_loader.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

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
    // UNUSED pieces (<unusedN> in Gemma) are non-special added tokens in Hugging Face's file.
    if (type != T::Control && type != T::Unknown && type != T::UserDefined && type != T::Unused) continue;
    AddedToken a;
    a.content = owned->tokens[static_cast<std::size_t>(id)];
    a.id = id;
    a.special = type == T::Control || type == T::Unknown;
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

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(p.string(), ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json parse_json_file(const std::filesystem::path& p) {
  try {
    return nlohmann::json::parse(slurp(p));
  } catch (const nlohmann::json::exception& e) {
    fail(p.string(), ": invalid JSON: ", e.what());
  }
}

}  // namespace

io::GgufTokenizerData gguf_tokenizer_from_hf(const std::filesystem::path& dir) {
  using T = io::GgufTokenType;
  const auto tok_path = dir / "tokenizer.json";
  const std::string src = tok_path.string();
  const nlohmann::json t = parse_json_file(tok_path);
  try {
    const auto& model = t.at("model");
    if (model.value("type", std::string()) != "BPE") fail(src, ": model.type is not BPE");
    io::GgufTokenizerData d;
    d.model = "gemma4";
    const auto& vocab = model.at("vocab");
    std::int64_t max_id = -1;
    for (auto it = vocab.begin(); it != vocab.end(); ++it) max_id = std::max(max_id, it.value().get<std::int64_t>());
    for (const auto& a : t.value("added_tokens", nlohmann::json::array()))
      max_id = std::max(max_id, a.at("id").get<std::int64_t>());
    if (max_id < 0 || max_id > (1 << 24)) fail(src, ": vocabulary ids out of range");
    d.tokens.resize(static_cast<std::size_t>(max_id + 1));
    d.token_types.assign(d.tokens.size(), static_cast<std::int32_t>(T::Normal));
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      const auto id = it.value().get<std::size_t>();
      d.tokens[id] = it.key();
      const std::string& k = it.key();
      if (k.size() == 6 && k.rfind("<0x", 0) == 0 && k.back() == '>') d.token_types[id] = static_cast<std::int32_t>(T::Byte);
    }
    const std::string unk = model.value("unk_token", nlohmann::json()).is_string() ? model["unk_token"].get<std::string>() : "";
    for (const auto& a : t.value("added_tokens", nlohmann::json::array())) {
      const auto id = a.at("id").get<std::size_t>();
      const auto content = a.at("content").get<std::string>();
      if (!d.tokens[id].empty() && d.tokens[id] != content)
        fail(src, ": added token ", id, " ('", content, "') differs from the vocabulary entry '", d.tokens[id], "'");
      d.tokens[id] = content;
      if (a.value("lstrip", false) || a.value("rstrip", false) || a.value("single_word", false) || a.value("normalized", false))
        fail(src, ": added token '", content, "' has lstrip/rstrip/single_word/normalized flags GGUF cannot store");
      d.token_types[id] = static_cast<std::int32_t>(content == unk ? T::Unknown
                                                    : a.value("special", false) ? T::Control : T::UserDefined);
    }
    d.scores.assign(d.tokens.size(), 0.0f);
    for (const auto& m : model.at("merges")) {
      std::string a, b;
      if (m.is_array()) {
        a = m.at(0).get<std::string>();
        b = m.at(1).get<std::string>();
      } else {
        const auto s = m.get<std::string>();
        const auto sp = s.find(' ', 1);
        if (sp == std::string::npos) fail(src, ": merge '", s, "' has no space");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      }
      if (a.find(' ') != std::string::npos || b.find(' ') != std::string::npos || a.empty() || b.empty())
        fail(src, ": merge ('", a, "', '", b, "') has a piece GGUF's \"a b\" form cannot hold");
      d.merges.push_back(a + " " + b);
    }
    auto id_of = [&](const std::string& piece) -> std::optional<std::int32_t> {
      auto it = std::find(d.tokens.begin(), d.tokens.end(), piece);
      if (it == d.tokens.end()) return std::nullopt;
      return static_cast<std::int32_t>(it - d.tokens.begin());
    };
    d.bos_id = id_of("<bos>");
    d.eos_id = id_of("<eos>");
    d.pad_id = id_of("<pad>");
    if (!unk.empty()) d.unk_id = id_of(unk);
    d.add_bos = true;  // llama.cpp's gemma4 convention; ringlm's chat code adds <bos> once either way
    if (std::filesystem::exists(dir / "tokenizer_config.json")) {
      const auto cfg = parse_json_file(dir / "tokenizer_config.json");
      d.add_bos = cfg.value("add_bos_token", d.add_bos);
      if (cfg.contains("chat_template") && cfg["chat_template"].is_string()) d.chat_template = cfg["chat_template"];
    }
    if (std::filesystem::exists(dir / "chat_template.jinja")) d.chat_template = slurp(dir / "chat_template.jinja");
    return d;
  } catch (const nlohmann::json::exception& e) {
    fail(src, ": unexpected structure: ", e.what());
  }
}

Tokenizer load_gguf_tokenizer(const io::GgufFile& file) {
  return Tokenizer::from_parts(tokenizer_parts_from_gguf(io::gguf_tokenizer_data(file), file.path()));
}

Tokenizer load_gguf_tokenizer(const std::filesystem::path& path) {
  const io::GgufFile file(path);
  return load_gguf_tokenizer(file);
}

}  // namespace ringlm
