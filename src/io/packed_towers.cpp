#include "io/packed_towers.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace ringlm::io {
namespace {

using json = nlohmann::json;

constexpr char kMagic[8] = {'R', 'L', 'M', 'P', 'A', 'C', 'K', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint64_t kAlign = 64;
constexpr std::uint64_t kHeader = 24;
constexpr const char* kFormat = "ringlm-towers";

std::optional<DType> dtype_named(const std::string& s) {
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::Q8_0})
    if (s == dtype_name(d)) return d;
  return std::nullopt;
}

std::uint64_t round_up(std::uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

}  // namespace

std::optional<std::uint64_t> tower_tensor_bytes(DType dtype, const std::vector<std::int64_t>& shape) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0 || d > (1ll << 32)) return std::nullopt;
    n *= static_cast<std::uint64_t>(d);
    if (n > (1ull << 40)) return std::nullopt;
  }
  switch (dtype) {
    case DType::F32: return n * 4;
    case DType::F16:
    case DType::BF16: return n * 2;
    case DType::Q8_0:
      if (shape.empty() || shape.back() % 32 != 0) return std::nullopt;
      return n / 32 * 34;
    default: return std::nullopt;
  }
}

PackedTowerSource::PackedTowerSource(const std::filesystem::path& path) : file_(path) {
  const std::string& name = file_.path();
  if (file_.size() < kHeader) fail_model_file(name, ": ", file_.size(), " bytes, shorter than the 24-byte header");
  const std::uint8_t* base = file_.data();
  if (std::memcmp(base, kMagic, 8) != 0) fail_model_file(name, ": bad magic (not a ringlm towers.rlpk file)");
  std::uint32_t version;
  std::uint64_t index_len;
  std::memcpy(&version, base + 8, 4);
  std::memcpy(&index_len, base + 16, 8);
  if (version != kVersion) fail_unsupported(name, ": format version ", version, " (this build reads ", kVersion, ")");
  if (index_len > kMaxTowerIndexBytes || index_len > file_.size() - kHeader)
    fail_model_file(name, ": index length ", index_len, " at byte 16 runs past the end of the file (", file_.size(),
                    " bytes)");
  json doc;
  try {
    doc = json::parse(std::string(reinterpret_cast<const char*>(base + kHeader), index_len));
  } catch (const json::exception& e) {
    fail_model_file(name, ": the index is not valid JSON: ", e.what());
  }
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != kFormat)
    fail_model_file(name, ": index field format: expected \"", kFormat, "\"");
  if (!doc.contains("tensors") || !doc["tensors"].is_array()) fail_model_file(name, ": index field tensors: expected an array");
  if (doc.contains("checkpoint_dtype")) {
    const auto d = doc["checkpoint_dtype"].is_string() ? dtype_named(doc["checkpoint_dtype"].get<std::string>()) : std::nullopt;
    if (!d || *d == DType::Q8_0) fail_model_file(name, ": index field checkpoint_dtype: expected \"F32\", \"F16\" or \"BF16\"");
    checkpoint_dtype_ = d;
  }
  const std::uint64_t data_start = round_up(kHeader + index_len);
  if (data_start > file_.size()) fail_model_file(name, ": data section at byte ", data_start, " starts past the end of the file");
  const std::uint64_t data_size = file_.size() - data_start;
  std::size_t i = 0;
  for (const json& e : doc["tensors"]) {
    const std::string where = "tensors[" + std::to_string(i++) + "]";
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string())
      fail_model_file(name, ": index ", where, ": field name: expected a string");
    const std::string tname = e["name"].get<std::string>();
    auto bad = [&](const char* field, const std::string& why) {
      fail_model_file(name, ": tensor ", tname, ": field ", field, ": ", why);
    };
    if (index_.count(tname)) bad("name", "appears twice");
    const auto dtype = e.contains("dtype") && e["dtype"].is_string() ? dtype_named(e["dtype"].get<std::string>()) : std::nullopt;
    if (!dtype) bad("dtype", "expected F32, F16, BF16 or Q8_0");
    if (!e.contains("shape") || !e["shape"].is_array() || e["shape"].size() > 4) bad("shape", "expected at most 4 integers");
    std::vector<std::int64_t> shape;
    for (const json& d : e["shape"]) {
      if (!d.is_number_unsigned()) bad("shape", "expected non-negative integers");
      shape.push_back(static_cast<std::int64_t>(std::min<std::uint64_t>(d.get<std::uint64_t>(), 1ull << 40)));
    }
    const auto want = tower_tensor_bytes(*dtype, shape);
    if (!want) bad("shape", "does not fit dtype " + std::string(dtype_name(*dtype)));
    for (const char* f : {"offset", "bytes"})
      if (!e.contains(f) || !e[f].is_number_unsigned()) bad(f, "expected a non-negative integer");
    const std::uint64_t offset = e["offset"].get<std::uint64_t>(), bytes = e["bytes"].get<std::uint64_t>();
    if (bytes != *want) bad("bytes", std::to_string(bytes) + ", but dtype x shape needs " + std::to_string(*want));
    if (offset % kAlign != 0) bad("offset", std::to_string(offset) + " is not a multiple of 64");
    if (offset > data_size || bytes > data_size - offset)
      bad("offset", "bytes " + std::to_string(data_start + offset) + ".." + std::to_string(data_start + offset + bytes) +
                        " run past the end of the file (" + std::to_string(file_.size()) + " bytes: truncated?)");
    TensorView v;
    v.name = tname;
    v.dtype = *dtype;
    v.shape = std::move(shape);
    v.data = base + data_start + offset;
    v.nbytes = bytes;
    v.file = name;
    index_.emplace(tname, views_.size());
    views_.push_back(std::move(v));
  }
}

const TensorView* PackedTowerSource::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &views_[it->second];
}

std::vector<std::string> PackedTowerSource::names() const {
  std::vector<std::string> out;
  for (const auto& v : views_) out.push_back(v.name);
  return out;
}

void write_packed_towers(const std::filesystem::path& path, const std::vector<TowerTensorOut>& tensors,
                         DType checkpoint_dtype) {
  json index = {{"format", kFormat}, {"version", kVersion}, {"alignment", kAlign},
                {"checkpoint_dtype", dtype_name(checkpoint_dtype)}, {"tensors", json::array()}};
  std::uint64_t offset = 0;
  std::vector<std::uint64_t> sizes;
  for (const TowerTensorOut& t : tensors) {
    const auto bytes = tower_tensor_bytes(t.dtype, t.shape);
    if (!bytes) fail_internal(path.string(), ": tensor ", t.name, ": shape does not fit ", dtype_name(t.dtype));
    index["tensors"].push_back(
        {{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"offset", offset}, {"bytes", *bytes}});
    sizes.push_back(*bytes);
    offset = round_up(offset + *bytes);
  }
  const std::string text = index.dump();
  const std::uint64_t index_len = text.size();
  const std::string tmp = path.string() + ".tmp-convert";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail_io(tmp, ": cannot create");
    char header[kHeader] = {};
    std::memcpy(header, kMagic, 8);
    std::memcpy(header + 8, &kVersion, 4);
    std::memcpy(header + 16, &index_len, 8);
    out.write(header, kHeader);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    const std::vector<char> zeros(kAlign, 0);
    std::uint64_t at = kHeader + index_len;
    auto pad = [&](std::uint64_t to) {
      out.write(zeros.data(), static_cast<std::streamsize>(to - at));
      at = to;
    };
    pad(round_up(at));
    const std::uint64_t data_start = at;
    std::uint64_t rel = 0;
    std::vector<std::uint8_t> buf;
    for (std::size_t k = 0; k < tensors.size(); ++k) {
      pad(data_start + rel);
      buf.assign(sizes[k], 0);
      tensors[k].fill(buf.data());
      out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
      at += sizes[k];
      rel = round_up(rel + sizes[k]);
    }
    out.close();
    if (!out) fail_io(tmp, ": write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail_io(path.string(), ": cannot rename from ", tmp, ": ", ec.message());
}

}  // namespace ringlm::io
