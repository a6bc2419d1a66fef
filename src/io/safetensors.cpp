#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "util/error.h"

namespace ringlm::io {
namespace {

using json = nlohmann::json;

constexpr const char* kLanguagePrefix = "model.language_model.";
constexpr const char* kTextOnlyPrefix = "model.";
// Parts of a multimodal checkpoint that the text decoder never reads.
constexpr const char* kIgnoredPrefixes[] = {"model.vision_tower.", "model.audio_tower.",
                                            "model.embed_vision.", "model.embed_audio.",
                                            "model.multi_modal_projector."};

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Element size of a supported dtype; 0 for a dtype ringlm does not read.
std::uint64_t element_size(const std::string& dtype, DType* out) {
  if (dtype == "F32") { *out = DType::F32; return 4; }
  if (dtype == "F16") { *out = DType::F16; return 2; }
  if (dtype == "BF16") { *out = DType::BF16; return 2; }
  if (dtype == "I32") { *out = DType::I32; return 4; }  // integer tables (the assistant's token ordering)
  if (dtype == "I64") { *out = DType::I64; return 8; }
  return 0;
}

}  // namespace

std::string canonical_tensor_name(const std::string& stored) {
  if (starts_with(stored, kLanguagePrefix)) return stored.substr(std::strlen(kLanguagePrefix));
  for (const char* p : kIgnoredPrefixes)
    if (starts_with(stored, p)) return "";
  if (starts_with(stored, kTextOnlyPrefix)) return stored.substr(std::strlen(kTextOnlyPrefix));
  return stored;  // e.g. lm_head.weight
}

std::string tower_tensor_name(const std::string& stored) {
  for (const char* p : kIgnoredPrefixes)
    if (starts_with(stored, p)) return stored.substr(std::strlen(kTextOnlyPrefix));
  return "";
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path, TensorSet set) : file_(path) {
  const std::string& name = file_.path();
  if (file_.size() < 8) fail_model_file(name, ": not a safetensors file (", file_.size(), " bytes, need an 8-byte header length)");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file_.data()[i];
  if (header_len > file_.size() - 8)
    fail_model_file(name, ": safetensors header length ", header_len, " runs past the end of the file (", file_.size(), " bytes)");
  if (header_len > kMaxSafetensorsHeaderBytes)
    fail_model_file(name, ": safetensors header length ", header_len, " exceeds the limit of ", kMaxSafetensorsHeaderBytes);
  // Parse from a bounded copy: the JSON parser never sees bytes past the header.
  const std::string header(reinterpret_cast<const char*>(file_.data() + 8), header_len);
  json doc;
  try {
    doc = json::parse(header);
  } catch (const json::exception& e) {
    fail_model_file(name, ": safetensors header is not valid JSON: ", e.what());
  }
  if (!doc.is_object()) fail_model_file(name, ": safetensors header is not a JSON object");

  const std::uint64_t data_start = 8 + header_len;
  const std::uint64_t data_size = file_.size() - data_start;
  struct Range { std::uint64_t begin, end; std::string tensor; };
  std::vector<Range> ranges;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& stored = it.key();
    if (stored == "__metadata__") continue;
    const json& entry = it.value();
    auto bad = [&](const std::string& why) { fail_model_file(name, ": tensor ", stored, ": ", why); };
    if (!entry.is_object()) bad("header entry is not an object");
    if (!entry.contains("dtype") || !entry["dtype"].is_string()) bad("missing or invalid dtype");
    if (!entry.contains("shape") || !entry["shape"].is_array()) bad("missing or invalid shape");
    if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
      bad("missing or invalid data_offsets");
    const std::string dtype = entry["dtype"].get<std::string>();
    TensorView view;
    view.name = set == TensorSet::Text ? canonical_tensor_name(stored) : tower_tensor_name(stored);
    view.file = name;
    std::uint64_t numel = 1;
    for (const json& d : entry["shape"]) {
      if (!d.is_number_unsigned()) bad("shape has a non-integer or negative dimension");
      std::uint64_t dim = d.get<std::uint64_t>();
      if (dim > (1ull << 40) || (dim != 0 && numel > (1ull << 62) / dim)) bad("shape is too large");
      numel *= dim;
      view.shape.push_back(static_cast<std::int64_t>(dim));
    }
    for (const json& o : entry["data_offsets"])
      if (!o.is_number_unsigned()) bad("data_offsets are not non-negative integers");
    const std::uint64_t begin = entry["data_offsets"][0].get<std::uint64_t>();
    const std::uint64_t end = entry["data_offsets"][1].get<std::uint64_t>();
    if (begin > end) bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + ") are reversed");
    if (end > data_size)
      bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + ") run past the end of the file (" +
          std::to_string(data_size) + " data bytes)");
    ranges.push_back({begin, end, stored});
    const std::uint64_t esize = element_size(dtype, &view.dtype);
    if (view.name.empty()) continue;  // the other set: bounds-checked, otherwise unused
    if (esize == 0) bad("unsupported dtype " + dtype + " (ringlm reads F32, F16, BF16, I32 and I64)");
    if (numel > (end - begin) / esize || end - begin != numel * esize)
      bad("holds " + std::to_string(end - begin) + " bytes but dtype " + dtype + " and its shape need " +
          std::to_string(numel * esize));
    view.data = file_.data() + data_start + begin;
    view.nbytes = end - begin;
    tensors_.push_back(std::move(view));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  const Range* furthest = nullptr;  // the non-empty range seen so far that ends last
  for (const Range& r : ranges) {
    if (r.end == r.begin) continue;
    if (furthest && r.begin < furthest->end)
      fail_model_file(name, ": tensor ", r.tensor, ": data_offsets overlap those of tensor ", furthest->tensor);
    if (!furthest || r.end > furthest->end) furthest = &r;
  }
}

SafetensorsSource::SafetensorsSource(const std::filesystem::path& dir, TensorSet set) : dir_(dir.string()), set_(set) {
  const auto single = dir / "model.safetensors";
  const auto index = dir / "model.safetensors.index.json";
  if (std::filesystem::exists(index)) {
    std::ifstream in(index, std::ios::binary);
    if (!in) fail_io(index.string(), ": cannot open");
    json doc;
    try {
      doc = json::parse(in);
    } catch (const json::exception& e) {
      fail_model_file(index.string(), ": not valid JSON: ", e.what());
    }
    if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object())
      fail_model_file(index.string(), ": missing object field weight_map");
    std::set<std::string> shard_names;
    for (auto it = doc["weight_map"].begin(); it != doc["weight_map"].end(); ++it) {
      if (!it.value().is_string()) fail_model_file(index.string(), ": weight_map entry for ", it.key(), " is not a file name");
      const std::string shard = it.value().get<std::string>();
      if (shard.empty() || shard.find('/') != std::string::npos || shard.find('\\') != std::string::npos ||
          shard == "." || shard == "..")
        fail_model_file(index.string(), ": weight_map entry for ", it.key(), " names an invalid shard file '", shard, "'");
      shard_names.insert(shard);
    }
    for (const auto& shard : shard_names) add_file(dir / shard);
    // Every tensor the index promises must be in the shard it names.
    for (auto it = doc["weight_map"].begin(); it != doc["weight_map"].end(); ++it) {
      const std::string canon = set_ == TensorSet::Text ? canonical_tensor_name(it.key()) : tower_tensor_name(it.key());
      if (canon.empty()) continue;
      const TensorView* v = find(canon);
      const std::string shard_path = (dir / it.value().get<std::string>()).string();
      if (!v || v->file != shard_path)
        fail_model_file(index.string(), ": tensor ", it.key(), " is listed in ", it.value().get<std::string>(), " but not stored there");
    }
  } else if (std::filesystem::exists(single)) {
    add_file(single);
  } else {
    fail_model_file(dir_, ": no model.safetensors or model.safetensors.index.json");
  }
}

void SafetensorsSource::add_file(const std::filesystem::path& path) {
  files_.push_back(std::make_unique<SafetensorsFile>(path, set_));
  for (const TensorView& v : files_.back()->tensors()) {
    auto [it, inserted] = by_name_.emplace(v.name, &v);
    if (!inserted) fail_model_file(v.file, ": tensor ", v.name, " is also stored in ", it->second->file);
  }
}

const TensorView* SafetensorsSource::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> SafetensorsSource::names() const {
  std::vector<std::string> out;
  for (const auto& [n, v] : by_name_) out.push_back(n);
  return out;
}

std::unique_ptr<TensorSource> open_safetensors_dir(const std::filesystem::path& dir) {
  return std::make_unique<SafetensorsSource>(dir);
}

}  // namespace ringlm::io
