#include "model/packed_source.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "io/mapped_file.h"
#include "model/packed_format.h"
#include "model/tensor_manifest.h"
#include "util/error.h"

namespace ringlm::model {

namespace {

// The largest index we accept (E4B's is ~60 KB).
constexpr std::uint64_t kMaxIndexBytes = 16ull << 20;

std::uint64_t read_u64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

class PackedDirSource : public io::TensorSource {
 public:
  PackedDirSource(const std::filesystem::path& dir, const ModelConfig& config) : dir_(dir.string()) {
    read_packed(dir / kPackedFile);
    read_sidecar(dir / kSidecarDir, config);
  }

  const io::TensorView* find(std::string_view name) const override {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& t : tensors_) out.push_back(t.name);
    return out;
  }
  std::string describe() const override { return dir_; }
  bool drop_pages(const void* p, std::size_t n) const override {
    if (pack_.drop_pages(p, n)) return true;
    for (const auto& m : mapped_)
      if (m.drop_pages(p, n)) return true;
    return false;
  }

 private:
  void add(io::TensorView v) {
    if (!by_name_.emplace(v.name, tensors_.size()).second) fail_model_file(v.file, ": tensor ", v.name, " is listed twice");
    tensors_.push_back(std::move(v));
  }

  void read_packed(const std::filesystem::path& path) {
    pack_ = io::MappedFile(path);
    const std::string& f = pack_.path();
    if (pack_.size() < kPackedHeaderBytes) fail_model_file(f, ": ", pack_.size(), " bytes is too short for the 24-byte header");
    const std::uint8_t* base = pack_.data();
    if (std::memcmp(base, kPackedMagic, 8) != 0) fail_model_file(f, ": bad magic at byte 0 (not a ringlm packed weights file)");
    std::uint32_t version;
    std::memcpy(&version, base + 8, 4);
    if (version < kPackedOldestVersion || version > kPackedVersion)
      fail_model_file(f, ": format version ", version, " at byte 8 (this build reads versions ", kPackedOldestVersion, " to ",
                      kPackedVersion, "; re-run ringlm convert)");
    const std::uint64_t index_len = read_u64(base + 16);
    if (index_len > kMaxIndexBytes || index_len > pack_.size() - kPackedHeaderBytes)
      fail_model_file(f, ": index length ", index_len, " at byte 16 runs past the end of the file (", pack_.size(), " bytes)");
    nlohmann::json index;
    try {
      index = nlohmann::json::parse(base + kPackedHeaderBytes, base + kPackedHeaderBytes + index_len);
    } catch (const nlohmann::json::exception& e) {
      fail_model_file(f, ": index at byte 24: invalid JSON: ", e.what());
    }
    const std::uint64_t data_start =
        (kPackedHeaderBytes + index_len + kPackedAlignment - 1) / kPackedAlignment * kPackedAlignment;
    if (!index.is_object() || index.value("format", "") != "ringlm-packed" || !index.contains("tensors") ||
        !index["tensors"].is_array())
      fail_model_file(f, ": index: expected {\"format\": \"ringlm-packed\", \"tensors\": [...]}");
    struct Range {
      std::uint64_t begin, end;
      std::string name;
    };
    std::vector<Range> ranges;
    std::vector<io::TensorView> factor_views;
    for (const auto& e : index["tensors"]) {
      io::TensorView v;
      v.file = f;
      try {
        v.name = e.at("name").get<std::string>();
        const std::string dtype = e.at("dtype").get<std::string>(), layout = e.at("layout").get<std::string>();
        bool factors = false;
        if (dtype == "Q4_0" && layout == "q4p16") v.dtype = io::DType::Q4_0, v.packed = true;
        else if (dtype == "F32" && layout == "row_major") v.dtype = io::DType::F32;
        else if (dtype == "F32" && layout == "row_factors" && version >= 2) v.dtype = io::DType::F32, factors = true;
        else fail_unsupported(f, ": tensor ", v.name, ": unsupported dtype/layout ", dtype, "/", layout);
        v.shape = e.at("shape").get<std::vector<std::int64_t>>();
        const auto rel = e.at("offset").get<std::uint64_t>();
        v.nbytes = e.at("bytes").get<std::uint64_t>();
        for (auto d : v.shape)
          if (d <= 0 || d > (1ll << 32)) fail_model_file(f, ": tensor ", v.name, ": bad dimension ", d);
        if (v.shape.empty() || v.shape.size() > 2 || (v.packed && v.shape.size() != 2))
          fail_model_file(f, ": tensor ", v.name, ": expected 1 or 2 dimensions (2 for q4p16)");
        if (v.packed && v.shape[1] % 32 != 0) fail_model_file(f, ": tensor ", v.name, ": q4p16 columns ", v.shape[1], " not a multiple of 32");
        const std::uint64_t want = packed_tensor_bytes(v.dtype, v.shape);
        if (v.nbytes != want)
          fail_model_file(f, ": tensor ", v.name, ": ", v.nbytes, " bytes listed, its dtype and shape need ", want);
        if (rel % kPackedAlignment != 0) fail_model_file(f, ": tensor ", v.name, ": offset ", rel, " is not 64-byte aligned");
        if (rel > pack_.size() || data_start > pack_.size() - rel || v.nbytes > pack_.size() - data_start - rel)
          fail_model_file(f, ": tensor ", v.name, ": bytes [", data_start + rel, ", ", data_start + rel, "+", v.nbytes,
               ") run past the end of the file (", pack_.size(), " bytes; truncated?)");
        v.data = base + data_start + rel;
        ranges.push_back({data_start + rel, data_start + rel + v.nbytes, v.name});
        if (factors) {
          factor_views.push_back(std::move(v));  // attached once the ranges are known to be sound
          continue;
        }
      } catch (const nlohmann::json::exception& ex) {
        fail_model_file(f, ": index entry ", e.dump().substr(0, 120), ": ", ex.what());
      }
      add(std::move(v));
    }
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    for (std::size_t i = 1; i < ranges.size(); ++i)
      if (ranges[i].begin < ranges[i - 1].end)
        fail_model_file(f, ": tensors ", ranges[i - 1].name, " and ", ranges[i].name, " overlap at byte ", ranges[i].begin);
    for (const io::TensorView& v : factor_views) attach_row_factors(v);
  }

  // NAME.row_factors (packed_format.h) becomes the row_scales of the q4p16 tensor NAME listed
  // before it; all-ones factors (every non-QAT row) are dropped, so those matrices run as before.
  void attach_row_factors(const io::TensorView& v) {
    const std::string& f = v.file;
    const std::string_view name(v.name);
    const std::size_t cut = name.size() - std::min(name.size(), std::strlen(kRowFactorsSuffix));
    auto it = by_name_.find(name.substr(0, cut));
    if (name.substr(cut) != kRowFactorsSuffix || it == by_name_.end() || !tensors_[it->second].packed)
      fail_model_file(f, ": tensor ", v.name, ": row factors of no q4p16 tensor listed before it");
    io::TensorView& m = tensors_[it->second];
    if (v.shape.size() != 1 || v.shape[0] != m.shape[0])
      fail_model_file(f, ": tensor ", v.name, ": ", v.shape[0], " row factors for ", m.shape[0], " rows");
    const auto* rf = reinterpret_cast<const float*>(v.data);
    bool ones = true;
    for (std::int64_t r = 0; r < v.shape[0]; ++r) {
      float x;
      std::memcpy(&x, rf + r, 4);
      if (!std::isfinite(x) || !(x > 0.0f))
        fail_model_file(f, ": tensor ", v.name, ": factor of row ", r, " is ", x, " (expected a finite positive number)");
      ones &= x == 1.0f;
    }
    if (!ones) m.row_scales = rf;
  }

  void read_sidecar(const std::filesystem::path& dir, const ModelConfig& c) {
    // Sizes first (all seven files), so a truncated or foreign table is named before use.
    for (const SidecarFile& s : plan_sidecar(c)) {
      const auto p = dir / s.name;
      std::error_code ec;
      const auto size = std::filesystem::file_size(p, ec);
      if (ec) fail_model_file(p.string(), ": missing (the PLE sidecar of a converted model; re-run ringlm convert)");
      if (s.name == "meta.json") continue;  // content checked below
      if (size != s.bytes)
        fail_model_file(p.string(), ": ", size, " bytes, expected ", s.bytes, " for the config (V ", c.vocab_size, ", D ",
             c.hidden_size, ", L ", c.num_layers, ", ld ", c.ple_dim, ")");
    }
    check_meta(dir / "meta.json", c);
    const std::int64_t PLD = static_cast<std::int64_t>(c.num_layers) * c.ple_dim;
    add_table(dir, "embed_tokens", tensor_name(&ModelWeights::embed_tokens), c.vocab_size, c.hidden_size);
    if (c.ple_dim > 0) add_table(dir, "embed_per_layer", tensor_name(&ModelWeights::embed_tokens_ple), c.ple_vocab_size, PLD);
  }

  void check_meta(const std::filesystem::path& path, const ModelConfig& c) {
    io::MappedFile m(path);
    nlohmann::json meta;
    try {
      meta = nlohmann::json::parse(m.data(), m.data() + m.size());
      const std::pair<const char*, std::int64_t> want[] = {
          {"V", c.vocab_size}, {"D", c.hidden_size}, {"L", c.num_layers}, {"ld", c.ple_dim},
          {"PLD", static_cast<std::int64_t>(c.num_layers) * c.ple_dim}, {"V_pl", c.ple_vocab_size}};
      for (const auto& [key, value] : want)
        if (meta.at(key).get<std::int64_t>() != value)
          fail_model_file(path.string(), ": field ", key, " is ", meta.at(key).dump(), " but config.json gives ", value);
      if (meta.value("dtype", "") != "int8") fail_model_file(path.string(), ": field dtype: expected \"int8\"");
    } catch (const nlohmann::json::exception& e) {
      fail_model_file(path.string(), ": ", e.what());
    }
  }

  void add_table(const std::filesystem::path& dir, const std::string& stem, const std::string& name, std::int64_t rows,
                 std::int64_t cols) {
    // Moving a MappedFile keeps its mapping, so the views stay valid inside mapped_.
    io::MappedFile codes(dir / (stem + ".i8")), scales(dir / (stem + ".scale.f32"));
    codes.advise_random();  // rows of the tokens seen, not their neighbours
    io::TensorView v;
    v.name = name;
    v.dtype = io::DType::I8;
    v.shape = {rows, cols};
    v.data = codes.data();
    v.nbytes = codes.size();
    v.file = codes.path();
    v.row_scales = reinterpret_cast<const float*>(scales.data());
    add(std::move(v));
    mapped_.push_back(std::move(codes));
    mapped_.push_back(std::move(scales));
  }

  std::string dir_;
  io::MappedFile pack_;
  std::vector<io::MappedFile> mapped_;  // the sidecar tables and their scales
  std::vector<io::TensorView> tensors_;
  std::map<std::string, std::size_t, std::less<>> by_name_;
};

}  // namespace

std::unique_ptr<io::TensorSource> open_packed_dir(const std::filesystem::path& dir, const ModelConfig& config) {
  return std::make_unique<PackedDirSource>(dir, config);
}

std::string packed_q4_rule(const std::filesystem::path& dir) {
  const io::MappedFile pack(dir / kPackedFile);
  const std::string& f = pack.path();
  if (pack.size() < kPackedHeaderBytes || std::memcmp(pack.data(), kPackedMagic, 8) != 0)
    fail_model_file(f, ": not a ringlm packed weights file");
  const std::uint64_t index_len = read_u64(pack.data() + 16);
  if (index_len > kMaxIndexBytes || index_len > pack.size() - kPackedHeaderBytes)
    fail_model_file(f, ": index length ", index_len, " at byte 16 runs past the end of the file");
  try {
    const auto index = nlohmann::json::parse(pack.data() + kPackedHeaderBytes, pack.data() + kPackedHeaderBytes + index_len);
    return index.value("q4_0_rule", std::string(kQ4RuleGgml));
  } catch (const nlohmann::json::exception& e) {
    fail_model_file(f, ": index at byte 24: invalid JSON: ", e.what());
  }
}

}  // namespace ringlm::model
