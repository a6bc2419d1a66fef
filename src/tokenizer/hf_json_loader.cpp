#include "tokenizer/hf_json_loader.h"

#include <simdjson.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ringlm {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// Small typed accessors that turn every shape mismatch into an error naming the field.
class Reader {
 public:
  explicit Reader(std::string name) : name_(std::move(name)) {}

  [[noreturn]] void bad(const std::string& path, std::string_view what) const {
    fail_model_file(name_, ": ", path, " ", what);
  }

  std::optional<element> get(object o, std::string_view key) const {
    element e;
    if (o.at_key(key).get(e) != simdjson::SUCCESS) return std::nullopt;
    return e;
  }
  // Missing and null are both "absent".
  std::optional<element> get_non_null(object o, std::string_view key) const {
    auto e = get(o, key);
    if (e && e->is_null()) return std::nullopt;
    return e;
  }
  element need(object o, std::string_view key, const std::string& path) const {
    auto e = get(o, key);
    if (!e) bad(path, "is missing");
    return *e;
  }
  object as_object(element e, const std::string& path) const {
    object o;
    if (e.get(o) != simdjson::SUCCESS) bad(path, "must be an object");
    return o;
  }
  array as_array(element e, const std::string& path) const {
    array a;
    if (e.get(a) != simdjson::SUCCESS) bad(path, "must be an array");
    return a;
  }
  std::string_view as_string(element e, const std::string& path) const {
    std::string_view s;
    if (e.get(s) != simdjson::SUCCESS) bad(path, "must be a string");
    return s;
  }
  int64_t as_int(element e, const std::string& path) const {
    int64_t v;
    if (e.get(v) != simdjson::SUCCESS) bad(path, "must be an integer");
    return v;
  }
  bool as_bool(element e, const std::string& path) const {
    bool v;
    if (e.get(v) != simdjson::SUCCESS) bad(path, "must be true or false");
    return v;
  }
  bool bool_or(object o, std::string_view key, bool dflt, const std::string& path) const {
    auto e = get_non_null(o, key);
    return e ? as_bool(*e, path + "." + std::string(key)) : dflt;
  }
  std::string type_of(object o, const std::string& path) const {
    return std::string(as_string(need(o, "type", path + ".type"), path + ".type"));
  }
  // A Hugging Face pattern {"String": "..."}; regex patterns are not supported.
  std::string literal_pattern(object o, const std::string& path) const {
    const object p = as_object(need(o, "pattern", path + ".pattern"), path + ".pattern");
    if (auto s = get(p, "String")) return std::string(as_string(*s, path + ".pattern.String"));
    if (get(p, "Regex")) bad(path + ".pattern", "is a Regex, which is not supported (only {\"String\": ...})");
    bad(path + ".pattern", "must be {\"String\": ...}");
  }

  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

void read_normalizer(const Reader& r, element e, const std::string& path, std::vector<NormalizerStep>& out) {
  if (e.is_null()) return;
  const object o = r.as_object(e, path);
  const std::string type = r.type_of(o, path);
  if (type == "Sequence") {
    size_t i = 0;
    for (element child : r.as_array(r.need(o, "normalizers", path + ".normalizers"), path + ".normalizers")) {
      read_normalizer(r, child, path + ".normalizers[" + std::to_string(i++) + "]", out);
    }
  } else if (type == "Replace") {
    NormalizerStep s;
    s.kind = NormalizerStep::Kind::kReplace;
    s.pattern = r.literal_pattern(o, path);
    s.content = std::string(r.as_string(r.need(o, "content", path + ".content"), path + ".content"));
    out.push_back(std::move(s));
  } else if (type == "Prepend") {
    NormalizerStep s;
    s.kind = NormalizerStep::Kind::kPrepend;
    s.content = std::string(r.as_string(r.need(o, "prepend", path + ".prepend"), path + ".prepend"));
    out.push_back(std::move(s));
  } else if (type == "Strip") {
    NormalizerStep s;
    s.kind = NormalizerStep::Kind::kStrip;
    s.strip_left = r.bool_or(o, "strip_left", true, path);
    s.strip_right = r.bool_or(o, "strip_right", true, path);
    out.push_back(std::move(s));
  } else {
    r.bad(path + ".type", "'" + type + "' is not a supported normalizer (supported: Sequence, Replace, Prepend, Strip)");
  }
}

// The normalizer runs on every text before it is tokenized; one whose Replace steps multiply
// its length (a 1 MB replacement for " ") turns a request into gigabytes. Real tokenizers grow
// text by a small factor (Gemma: " " -> "▁", 3x), so the worst case is bounded here.
constexpr double kMaxNormalizerGrowth = 16.0;
constexpr std::size_t kMaxPrependBytes = 1024;

void check_normalizer_growth(const Reader& r, const std::vector<NormalizerStep>& steps) {
  double growth = 1.0;
  for (const auto& s : steps) {
    if (s.kind == NormalizerStep::Kind::kReplace && s.content.size() > s.pattern.size()) {
      growth *= static_cast<double>(s.content.size()) / static_cast<double>(std::max<std::size_t>(1, s.pattern.size()));
    }
    if (s.kind == NormalizerStep::Kind::kPrepend && s.content.size() > kMaxPrependBytes) {
      r.bad("normalizer", "prepends " + std::to_string(s.content.size()) + " bytes (limit " +
                              std::to_string(kMaxPrependBytes) + ")");
    }
  }
  if (growth > kMaxNormalizerGrowth) {
    r.bad("normalizer", "can make a text " + std::to_string(static_cast<long long>(growth)) +
                            " times longer (limit " + std::to_string(static_cast<int>(kMaxNormalizerGrowth)) + ")");
  }
}

PreTokenizerStep::Prepend read_prepend_scheme(const Reader& r, object o, const std::string& path) {
  if (auto e = r.get_non_null(o, "prepend_scheme")) {
    const std::string_view s = r.as_string(*e, path + ".prepend_scheme");
    if (s == "always") return PreTokenizerStep::Prepend::kAlways;
    if (s == "never") return PreTokenizerStep::Prepend::kNever;
    if (s == "first") return PreTokenizerStep::Prepend::kFirst;
    r.bad(path + ".prepend_scheme", "must be \"always\", \"never\" or \"first\"");
  }
  // Older files: add_prefix_space.
  return r.bool_or(o, "add_prefix_space", true, path) ? PreTokenizerStep::Prepend::kAlways
                                                       : PreTokenizerStep::Prepend::kNever;
}

void read_pre_tokenizer(const Reader& r, element e, const std::string& path, std::vector<PreTokenizerStep>& out) {
  if (e.is_null()) return;
  const object o = r.as_object(e, path);
  const std::string type = r.type_of(o, path);
  if (type == "Sequence") {
    size_t i = 0;
    for (element child : r.as_array(r.need(o, "pretokenizers", path + ".pretokenizers"), path + ".pretokenizers")) {
      read_pre_tokenizer(r, child, path + ".pretokenizers[" + std::to_string(i++) + "]", out);
    }
  } else if (type == "Split") {
    PreTokenizerStep s;
    s.kind = PreTokenizerStep::Kind::kSplit;
    s.pattern = r.literal_pattern(o, path);
    const std::string_view b = r.as_string(r.need(o, "behavior", path + ".behavior"), path + ".behavior");
    if (b == "Removed") s.behavior = SplitBehavior::kRemoved;
    else if (b == "Isolated") s.behavior = SplitBehavior::kIsolated;
    else if (b == "MergedWithPrevious") s.behavior = SplitBehavior::kMergedWithPrevious;
    else if (b == "MergedWithNext") s.behavior = SplitBehavior::kMergedWithNext;
    else if (b == "Contiguous") s.behavior = SplitBehavior::kContiguous;
    else r.bad(path + ".behavior", "'" + std::string(b) + "' is not a known split behavior");
    s.invert = r.bool_or(o, "invert", false, path);
    out.push_back(std::move(s));
  } else if (type == "Metaspace") {
    PreTokenizerStep s;
    s.kind = PreTokenizerStep::Kind::kMetaspace;
    s.pattern = std::string(r.as_string(r.need(o, "replacement", path + ".replacement"), path + ".replacement"));
    s.prepend = read_prepend_scheme(r, o, path);
    s.split = r.bool_or(o, "split", true, path);
    out.push_back(std::move(s));
  } else {
    r.bad(path + ".type", "'" + type + "' is not a supported pre-tokenizer (supported: Sequence, Split with a String pattern, Metaspace)");
  }
}

void read_decoder(const Reader& r, element e, const std::string& path, std::vector<DecoderStep>& out) {
  const object o = r.as_object(e, path);
  const std::string type = r.type_of(o, path);
  DecoderStep s;
  if (type == "Sequence") {
    size_t i = 0;
    for (element child : r.as_array(r.need(o, "decoders", path + ".decoders"), path + ".decoders")) {
      read_decoder(r, child, path + ".decoders[" + std::to_string(i++) + "]", out);
    }
    return;
  } else if (type == "Replace") {
    s.kind = DecoderStep::Kind::kReplace;
    s.pattern = r.literal_pattern(o, path);
    s.content = std::string(r.as_string(r.need(o, "content", path + ".content"), path + ".content"));
  } else if (type == "ByteFallback") {
    s.kind = DecoderStep::Kind::kByteFallback;
  } else if (type == "Fuse") {
    s.kind = DecoderStep::Kind::kFuse;
  } else if (type == "Strip") {
    s.kind = DecoderStep::Kind::kStrip;
    s.content = std::string(r.as_string(r.need(o, "content", path + ".content"), path + ".content"));
    s.start = static_cast<int>(std::clamp<int64_t>(r.as_int(r.need(o, "start", path + ".start"), path + ".start"), 0, 1 << 20));
    s.stop = static_cast<int>(std::clamp<int64_t>(r.as_int(r.need(o, "stop", path + ".stop"), path + ".stop"), 0, 1 << 20));
  } else if (type == "Metaspace") {
    s.kind = DecoderStep::Kind::kMetaspace;
    s.pattern = std::string(r.as_string(r.need(o, "replacement", path + ".replacement"), path + ".replacement"));
    s.strip_first_space = read_prepend_scheme(r, o, path) != PreTokenizerStep::Prepend::kNever;
  } else {
    r.bad(path + ".type", "'" + type + "' is not a supported decoder (supported: Sequence, Replace, ByteFallback, Fuse, Strip, Metaspace)");
  }
  out.push_back(std::move(s));
}

void read_model(const Reader& r, object model, TokenizerParts& parts) {
  const std::string path = "model";
  std::string type;
  if (auto t = r.get_non_null(model, "type")) {
    type = std::string(r.as_string(*t, "model.type"));
  } else if (r.get(model, "merges")) {
    type = "BPE";  // Hugging Face accepts an untagged BPE model
  } else {
    r.bad("model.type", "is missing");
  }
  if (type != "BPE") r.bad("model.type", "'" + type + "' is not supported (only BPE)");

  const object vocab = r.as_object(r.need(model, "vocab", "model.vocab"), "model.vocab");
  parts.vocab.reserve(vocab.size());
  for (auto field : vocab) {
    int64_t id;
    if (field.value.get(id) != simdjson::SUCCESS || id < 0 || id > INT32_MAX) {
      r.bad("model.vocab[\"" + std::string(field.key) + "\"]", "must be a non-negative integer id");
    }
    parts.vocab.emplace_back(field.key, static_cast<int32_t>(id));
  }
  if (parts.vocab.empty()) r.bad("model.vocab", "is empty");

  if (auto merges = r.get_non_null(model, "merges")) {
    const array list = r.as_array(*merges, "model.merges");
    parts.merges.reserve(list.size());
    size_t i = 0;
    for (element m : list) {
      // The field path is only spelled out on error (this loop runs ~500k times).
      auto mpath = [i] { return "model.merges[" + std::to_string(i) + "]"; };
      std::string_view text;
      array pair;
      if (m.get(text) == simdjson::SUCCESS) {
        // Legacy form "left right": exactly one space (pieces never contain a raw space).
        const size_t sp = text.find(' ');
        if (sp == std::string_view::npos || text.find(' ', sp + 1) != std::string_view::npos) {
          r.bad(mpath(), "must be two pieces separated by one space");
        }
        parts.merges.emplace_back(text.substr(0, sp), text.substr(sp + 1));
      } else if (m.get(pair) == simdjson::SUCCESS && pair.size() == 2) {
        auto it = pair.begin();
        std::string_view left, right;
        const bool ok_left = (*it).get(left) == simdjson::SUCCESS;
        ++it;
        const bool ok_right = (*it).get(right) == simdjson::SUCCESS;
        if (!ok_left || !ok_right) r.bad(mpath(), "must hold two strings");
        parts.merges.emplace_back(left, right);
      } else {
        r.bad(mpath(), "must be \"a b\" or [\"a\", \"b\"]");
      }
      ++i;
    }
  }

  if (auto unk = r.get_non_null(model, "unk_token")) parts.unk_token = std::string(r.as_string(*unk, "model.unk_token"));
  parts.byte_fallback = r.bool_or(model, "byte_fallback", false, path);
  parts.fuse_unk = r.bool_or(model, "fuse_unk", false, path);
  parts.ignore_merges = r.bool_or(model, "ignore_merges", false, path);
  if (auto d = r.get_non_null(model, "dropout")) {
    double p = 0;
    if (d->get(p) != simdjson::SUCCESS) r.bad("model.dropout", "must be a number or null");
    if (p > 0) r.bad("model.dropout", "is not supported (BPE dropout is a training-time feature)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (auto v = r.get_non_null(model, key)) {
      if (!r.as_string(*v, std::string("model.") + key).empty()) r.bad(std::string("model.") + key, "is not supported");
    }
  }
}

void read_added_tokens(const Reader& r, element e, TokenizerParts& parts) {
  size_t i = 0;
  for (element t : r.as_array(e, "added_tokens")) {
    const std::string path = "added_tokens[" + std::to_string(i++) + "]";
    const object o = r.as_object(t, path);
    AddedToken a;
    const int64_t id = r.as_int(r.need(o, "id", path + ".id"), path + ".id");
    if (id < 0 || id > INT32_MAX) r.bad(path + ".id", "must be a non-negative id");
    a.id = static_cast<int32_t>(id);
    a.content = std::string(r.as_string(r.need(o, "content", path + ".content"), path + ".content"));
    if (a.content.empty()) r.bad(path + ".content", "is empty");
    a.special = r.bool_or(o, "special", false, path);
    a.lstrip = r.bool_or(o, "lstrip", false, path);
    a.rstrip = r.bool_or(o, "rstrip", false, path);
    a.single_word = r.bool_or(o, "single_word", false, path);
    a.normalized = r.bool_or(o, "normalized", !a.special, path);  // Hugging Face default
    parts.added_tokens.push_back(std::move(a));
  }
}

struct ParsedFile {
  simdjson::dom::parser parser;
  element root;
};

// Parses `path`; returns false if the file does not exist.
bool parse_file(const std::filesystem::path& path, ParsedFile& out, simdjson::padded_string& storage) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return false;
  if (simdjson::padded_string::load(path.string()).get(storage) != simdjson::SUCCESS) {
    fail_io(path.string(), ": cannot read the file");
  }
  const auto err = out.parser.parse(storage).get(out.root);
  if (err != simdjson::SUCCESS) fail_model_file(path.string(), ": invalid JSON (", simdjson::error_message(err), ")");
  return true;
}

// Resolves a token given as "<bos>" or {"content": "<bos>", ...} to an id.
std::optional<int32_t> token_id_of(const Reader& r, element e, const std::string& path, const TokenizerParts& parts) {
  std::string_view content;
  object o;
  if (e.get(o) == simdjson::SUCCESS) {
    content = r.as_string(r.need(o, "content", path + ".content"), path + ".content");
  } else if (e.is_null()) {
    return std::nullopt;
  } else {
    content = r.as_string(e, path);
  }
  for (const AddedToken& t : parts.added_tokens)
    if (t.content == content) return t.id;
  for (const auto& [p, id] : parts.vocab)
    if (p == content) return id;
  r.bad(path, "names '" + std::string(content) + "', which is not in the vocabulary");
}

void add_ids(const Reader& r, element e, const std::string& path, std::vector<int32_t>& out) {
  array a;
  if (e.get(a) == simdjson::SUCCESS) {
    size_t i = 0;
    for (element x : a) {
      const int64_t v = r.as_int(x, path + "[" + std::to_string(i++) + "]");
      if (v < 0 || v > INT32_MAX) r.bad(path, "holds an invalid id");
      out.push_back(static_cast<int32_t>(v));
    }
  } else if (!e.is_null()) {
    const int64_t v = r.as_int(e, path);
    if (v < 0 || v > INT32_MAX) r.bad(path, "is an invalid id");
    out.push_back(static_cast<int32_t>(v));
  }
}

}  // namespace

namespace {

// The JSON text and its parsed DOM; the parts' views point into it.
struct JsonDocument {
  simdjson::padded_string text;
  simdjson::dom::parser parser;
};

TokenizerParts parse_document(std::shared_ptr<JsonDocument> doc, const std::string& name) {
  Reader r(name);
  element root;
  const auto err = doc->parser.parse(doc->text).get(root);
  if (err != simdjson::SUCCESS) fail_model_file(name, ": invalid JSON (", simdjson::error_message(err), ")");
  const object top = r.as_object(root, "the top level");

  TokenizerParts parts;
  parts.storage.push_back(doc);
  read_model(r, r.as_object(r.need(top, "model", "model"), "model"), parts);
  if (auto e = r.get_non_null(top, "added_tokens")) read_added_tokens(r, *e, parts);
  if (auto e = r.get(top, "normalizer")) {
    read_normalizer(r, *e, "normalizer", parts.normalizer);
    check_normalizer_growth(r, parts.normalizer);
  }
  if (auto e = r.get(top, "pre_tokenizer")) read_pre_tokenizer(r, *e, "pre_tokenizer", parts.pre_tokenizer);
  if (auto e = r.get_non_null(top, "decoder")) {
    read_decoder(r, *e, "decoder", parts.decoder);
  } else {
    parts.has_decoder = false;
  }
  return parts;
}

}  // namespace

TokenizerParts parse_hf_tokenizer_json(std::string_view json, const std::string& name) {
  auto doc = std::make_shared<JsonDocument>();
  doc->text = simdjson::padded_string(json);
  return parse_document(std::move(doc), name);
}

void apply_hf_config_files(TokenizerParts& parts, const std::filesystem::path& dir) {
  std::vector<int32_t> eos;
  std::optional<int32_t> bos;
  {
    const auto path = dir / "generation_config.json";
    ParsedFile f;
    simdjson::padded_string storage;
    if (parse_file(path, f, storage)) {
      const Reader r(path.string());
      const object o = r.as_object(f.root, "the top level");
      if (auto e = r.get_non_null(o, "eos_token_id")) add_ids(r, *e, "eos_token_id", eos);
      if (auto e = r.get_non_null(o, "bos_token_id")) bos = static_cast<int32_t>(r.as_int(*e, "bos_token_id"));
    }
  }
  {
    const auto path = dir / "config.json";
    ParsedFile f;
    simdjson::padded_string storage;
    if (parse_file(path, f, storage)) {
      const Reader r(path.string());
      const object o = r.as_object(f.root, "the top level");
      if (auto e = r.get_non_null(o, "eos_token_id")) add_ids(r, *e, "eos_token_id", eos);
      if (!bos)
        if (auto e = r.get_non_null(o, "bos_token_id")) bos = static_cast<int32_t>(r.as_int(*e, "bos_token_id"));
    }
  }
  {
    const auto path = dir / "tokenizer_config.json";
    ParsedFile f;
    simdjson::padded_string storage;
    if (parse_file(path, f, storage)) {
      const Reader r(path.string());
      const object o = r.as_object(f.root, "the top level");
      if (auto e = r.get(o, "bos_token")) {
        if (auto id = token_id_of(r, *e, "bos_token", parts)) bos = id;  // the tokenizer's own word wins
      }
      if (auto e = r.get(o, "eos_token")) {
        if (auto id = token_id_of(r, *e, "eos_token", parts)) eos.push_back(*id);
      }
      parts.add_bos_default = r.bool_or(o, "add_bos_token", false, "");
    }
  }
  if (bos) parts.bos_id = *bos;
  for (int32_t id : eos)
    if (std::find(parts.eos_ids.begin(), parts.eos_ids.end(), id) == parts.eos_ids.end()) parts.eos_ids.push_back(id);
}

TokenizerParts load_hf_tokenizer_parts(const std::filesystem::path& dir_or_json) {
  std::error_code ec;
  std::filesystem::path json = dir_or_json;
  if (std::filesystem::is_directory(dir_or_json, ec)) json = dir_or_json / "tokenizer.json";
  if (!std::filesystem::exists(json, ec)) fail(json.string(), ": no such file (expected a Hugging Face tokenizer.json)");
  auto doc = std::make_shared<JsonDocument>();
  if (simdjson::padded_string::load(json.string()).get(doc->text) != simdjson::SUCCESS) {
    fail_io(json.string(), ": cannot read the file");
  }
  TokenizerParts parts = parse_document(std::move(doc), json.string());
  apply_hf_config_files(parts, json.parent_path());
  return parts;
}

}  // namespace ringlm

namespace ringlm {

Tokenizer Tokenizer::load(const std::filesystem::path& dir_or_json) {
  TokenizerParts parts = load_hf_tokenizer_parts(dir_or_json);
  try {
    return from_parts(std::move(parts));
  } catch (const Error& e) {
    fail_model_file(dir_or_json.string(), ": ", e.what());
  }
}

}  // namespace ringlm
