#include "tokenizer/gguf_tokenizer_loader.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include <simdjson.h>

#include "util/error.h"

namespace ringlm {

TokenizerParts tokenizer_parts_from_gguf(const io::GgufTokenizerData& d, const std::string& source) {
  if (d.model != "gemma4")
    fail_unsupported(source, ": tokenizer.ggml.model is '", d.model, "'; ringlm builds only 'gemma4' tokenizers from GGUF");
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
      fail_model_file(source, ": tokenizer.ggml.merges entry ", k, " ('", m, "') is not two pieces separated by a space");
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
  if (!in) fail_io(p.string(), ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Small typed accessors over simdjson's DOM that fail with the file and the JSON path.
struct Json {
  std::string file;
  simdjson::dom::element get(simdjson::dom::element e, const char* key, const std::string& path) const {
    simdjson::dom::element v;
    if (e.at_key(key).get(v) != simdjson::SUCCESS) fail_model_file(file, ": ", path, ".", key, " is missing");
    return v;
  }
  std::string str(simdjson::dom::element e, const std::string& path) const {
    std::string_view v;
    if (e.get(v) != simdjson::SUCCESS) fail_model_file(file, ": ", path, " must be a string");
    return std::string(v);
  }
  std::int64_t integer(simdjson::dom::element e, const std::string& path) const {
    std::int64_t v;
    if (e.get(v) != simdjson::SUCCESS) fail_model_file(file, ": ", path, " must be an integer");
    return v;
  }
  bool flag(simdjson::dom::element e, const char* key) const {
    simdjson::dom::element v;
    bool b = false;
    if (e.at_key(key).get(v) != simdjson::SUCCESS || v.get(b) != simdjson::SUCCESS) return false;
    return b;
  }
};

}  // namespace

io::GgufTokenizerData gguf_tokenizer_from_hf(const std::filesystem::path& dir) {
  using T = io::GgufTokenType;
  const auto tok_path = dir / "tokenizer.json";
  const Json j{tok_path.string()};
  const std::string& src = j.file;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.load(tok_path.string()).get(doc) != simdjson::SUCCESS) fail_model_file(src, ": cannot read or parse as JSON");
  const auto model = j.get(doc, "model", "");
  if (j.str(j.get(model, "type", "model"), "model.type") != "BPE") fail_model_file(src, ": model.type is not BPE");
  io::GgufTokenizerData d;
  d.model = "gemma4";
  simdjson::dom::object vocab;
  if (j.get(model, "vocab", "model").get(vocab) != simdjson::SUCCESS) fail_model_file(src, ": model.vocab must be an object");
  simdjson::dom::array added;
  if (doc.at_key("added_tokens").get(added) != simdjson::SUCCESS) added = {};
  std::int64_t max_id = -1;
  for (auto field : vocab) max_id = std::max(max_id, j.integer(field.value, "model.vocab"));
  for (auto a : added) max_id = std::max(max_id, j.integer(j.get(a, "id", "added_tokens[]"), "added_tokens[].id"));
  if (max_id < 0 || max_id > (1 << 24)) fail_model_file(src, ": vocabulary ids out of range");
  d.tokens.resize(static_cast<std::size_t>(max_id + 1));
  d.token_types.assign(d.tokens.size(), static_cast<std::int32_t>(T::Normal));
  for (auto field : vocab) {
    const auto id = static_cast<std::size_t>(j.integer(field.value, "model.vocab"));
    if (static_cast<std::int64_t>(id) < 0) fail_model_file(src, ": negative id in model.vocab");
    const std::string_view k = field.key;
    d.tokens[id] = std::string(k);
    if (k.size() == 6 && k.substr(0, 3) == "<0x" && k.back() == '>') d.token_types[id] = static_cast<std::int32_t>(T::Byte);
  }
  std::string unk;
  {
    std::string_view u;
    if (model["unk_token"].get(u) == simdjson::SUCCESS) unk = std::string(u);
  }
  for (auto a : added) {
    const std::int64_t id = j.integer(j.get(a, "id", "added_tokens[]"), "added_tokens[].id");
    if (id < 0) fail_model_file(src, ": negative added token id");
    const std::string content = j.str(j.get(a, "content", "added_tokens[]"), "added_tokens[].content");
    auto& slot = d.tokens[static_cast<std::size_t>(id)];
    if (!slot.empty() && slot != content)
      fail_model_file(src, ": added token ", id, " ('", content, "') differs from the vocabulary entry '", slot, "'");
    slot = content;
    if (j.flag(a, "lstrip") || j.flag(a, "rstrip") || j.flag(a, "single_word") || j.flag(a, "normalized"))
      fail_model_file(src, ": added token '", content, "' has lstrip/rstrip/single_word/normalized flags GGUF cannot store");
    d.token_types[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(
        content == unk ? T::Unknown : j.flag(a, "special") ? T::Control : T::UserDefined);
  }
  d.scores.assign(d.tokens.size(), 0.0f);
  simdjson::dom::array merges;
  if (j.get(model, "merges", "model").get(merges) != simdjson::SUCCESS) fail_model_file(src, ": model.merges must be an array");
  d.merges.reserve(merges.size());
  for (auto m : merges) {
    std::string_view text, a, b;
    simdjson::dom::array pair;
    if (m.get(text) == simdjson::SUCCESS) {
      const auto sp = text.find(' ', 1);
      if (sp == std::string_view::npos) fail_model_file(src, ": merge '", text, "' has no space");
      a = text.substr(0, sp);
      b = text.substr(sp + 1);
    } else if (m.get(pair) == simdjson::SUCCESS && pair.size() == 2 && pair.at(0).get(a) == simdjson::SUCCESS &&
               pair.at(1).get(b) == simdjson::SUCCESS) {
    } else {
      fail_model_file(src, ": model.merges entries must be \"a b\" strings or [a, b] pairs");
    }
    if (a.empty() || b.empty() || a.find(' ') != std::string_view::npos || b.find(' ') != std::string_view::npos)
      fail_model_file(src, ": merge ('", a, "', '", b, "') has a piece GGUF's \"a b\" form cannot hold");
    std::string joined;
    joined.reserve(a.size() + b.size() + 1);
    joined.append(a).append(1, ' ').append(b);
    d.merges.push_back(std::move(joined));
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
  const auto cfg_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(cfg_path)) {
    simdjson::dom::parser cfg_parser;
    simdjson::dom::element cfg;
    if (cfg_parser.load(cfg_path.string()).get(cfg) != simdjson::SUCCESS)
      fail_model_file(cfg_path.string(), ": cannot read or parse as JSON");
    bool add_bos;
    if (cfg["add_bos_token"].get(add_bos) == simdjson::SUCCESS) d.add_bos = add_bos;
    std::string_view tmpl;
    if (cfg["chat_template"].get(tmpl) == simdjson::SUCCESS) d.chat_template = std::string(tmpl);
  }
  if (std::filesystem::exists(dir / "chat_template.jinja")) d.chat_template = slurp(dir / "chat_template.jinja");
  return d;
}

Tokenizer load_gguf_tokenizer(const io::GgufFile& file) {
  return Tokenizer::from_parts(tokenizer_parts_from_gguf(io::gguf_tokenizer_data(file), file.path()));
}

Tokenizer load_gguf_tokenizer(const std::filesystem::path& path) {
  const io::GgufFile file(path);
  return load_gguf_tokenizer(file);
}

Tokenizer load_tokenizer_any(const std::filesystem::path& path) {
  if (std::filesystem::is_regular_file(path) && io::is_gguf_file(path)) return load_gguf_tokenizer(path);
  return Tokenizer::load(path);
}

}  // namespace ringlm
