#include "model/packed_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "kernels/q4_formats.h"
#include "kernels/q4_packed.h"
#include "model/tensor_manifest.h"
#include "util/error.h"

namespace ringlm::model {

namespace {

std::uint64_t align_up(std::uint64_t n) { return (n + kPackedAlignment - 1) / kPackedAlignment * kPackedAlignment; }

// A float as JSON text that reads back exactly and never depends on the locale or printf's
// shortest-form choices for integral values: "16.0", "4.0", else 9 significant digits.
std::string json_float(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) std::snprintf(buf, sizeof buf, "%.1f", v);
  else std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::uint64_t packed_tensor_bytes(io::DType dtype, const std::vector<std::int64_t>& shape) {
  if (dtype == io::DType::Q4_0) {
    if (shape.size() != 2) fail("packed q4p16 tensor needs 2 dimensions");
    return kernels::q4_packed_bytes(static_cast<std::size_t>(shape[0]), static_cast<std::size_t>(shape[1]));
  }
  if (dtype != io::DType::F32) fail("packed tensor: unsupported dtype ", io::dtype_name(dtype));
  std::uint64_t n = 4;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

PackedPlan plan_packed(const ModelConfig& c) {
  PackedPlan plan;
  // The manifest's packed_slot orders each layer's block and then the tail; the embedding
  // tables (slot -1) go to the sidecar. The head is always stored (from the embedding when tied).
  auto add = [&](std::vector<const ManifestTensor*> block) {
    std::stable_sort(block.begin(), block.end(), [](const ManifestTensor* x, const ManifestTensor* y) {
      return x->entry->packed_slot < y->entry->packed_slot;
    });
    for (const ManifestTensor* t : block) {
      const bool q4 = t->entry->kind == TensorKind::linear && t->shape[1] % static_cast<std::int64_t>(kernels::kQBlock) == 0;
      plan.tensors.push_back({t->name, q4 ? io::DType::Q4_0 : io::DType::F32, t->shape, 0, 0, t->entry, t->layer});
      if (q4)
        plan.tensors.push_back({t->name + kRowFactorsSuffix, io::DType::F32, {t->shape[0]}, 0, 0, t->entry, t->layer, true});
    }
  };
  const std::vector<ManifestTensor> all = manifest_tensors(c);
  auto stored = [](const ManifestTensor& t) {
    return t.entry->packed_slot >= 0 && (t.present || t.entry->presence == Presence::head);
  };
  for (int l = 0; l < c.num_layers; ++l) {
    std::vector<const ManifestTensor*> block;
    for (const ManifestTensor& t : all)
      if (t.layer == l && stored(t)) block.push_back(&t);
    add(std::move(block));
  }
  std::vector<const ManifestTensor*> tail;
  for (const ManifestTensor& t : all)
    if (t.layer < 0 && stored(t)) tail.push_back(&t);
  add(std::move(tail));

  // Offsets in the index are relative to the data area, so the index length does not feed
  // back into the offsets it lists.
  nlohmann::ordered_json index;
  index["format"] = "ringlm-packed";
  index["version"] = kPackedVersion;
  index["alignment"] = kPackedAlignment;
  index["q4_0_rule"] = kQ4RuleLattice;
  index["tensors"] = nlohmann::ordered_json::array();
  std::uint64_t rel = 0;
  for (PackedTensor& t : plan.tensors) {
    t.bytes = packed_tensor_bytes(t.dtype, t.shape);
    nlohmann::ordered_json e;
    e["name"] = t.name;
    e["dtype"] = t.dtype == io::DType::Q4_0 ? "Q4_0" : "F32";
    e["layout"] = t.dtype == io::DType::Q4_0 ? "q4p16" : t.row_factors ? "row_factors" : "row_major";
    e["shape"] = t.shape;
    e["offset"] = rel;
    e["bytes"] = t.bytes;
    index["tensors"].push_back(std::move(e));
    t.offset = rel;
    rel = align_up(rel + t.bytes);
  }
  plan.index_json = index.dump();
  plan.data_start = align_up(kPackedHeaderBytes + plan.index_json.size());
  for (PackedTensor& t : plan.tensors) t.offset += plan.data_start;
  plan.file_bytes = plan.tensors.empty() ? plan.data_start : plan.tensors.back().offset + plan.tensors.back().bytes;
  return plan;
}

std::vector<SidecarFile> plan_sidecar(const ModelConfig& c) {
  const auto V = static_cast<std::uint64_t>(c.vocab_size), Vp = static_cast<std::uint64_t>(c.ple_vocab_size);
  const auto D = static_cast<std::uint64_t>(c.hidden_size), ld = static_cast<std::uint64_t>(c.ple_dim);
  const std::uint64_t PLD = static_cast<std::uint64_t>(c.num_layers) * ld;
  return {
      {"embed_per_layer.i8", Vp * PLD},
      {"embed_tokens.i8", V * D},
      {"proj.f32", PLD * D * 4},
      {"embed_per_layer.scale.f32", Vp * 4},
      {"embed_tokens.scale.f32", V * 4},
      {"proj_norm.f32", ld * 4},
      {"meta.json", sidecar_meta_json(c).size()},
  };
}

std::string sidecar_meta_json(const ModelConfig& c) {
  // Hand-written so the bytes are fixed: field order, spacing and number forms never change.
  // V/D/PLD/L/ld/embed_scale_pl are the model card's fields; V_pl is the per-layer table's
  // row count; the rest states the dequantization convention (x = scale[row] * q).
  const long long PLD = static_cast<long long>(c.num_layers) * c.ple_dim;
  std::string s = "{\"format\":\"gemma4_qat_gather_raw\",\"version\":1";
  s += ",\"V\":" + std::to_string(c.vocab_size);
  s += ",\"D\":" + std::to_string(c.hidden_size);
  s += ",\"PLD\":" + std::to_string(PLD);
  s += ",\"L\":" + std::to_string(c.num_layers);
  s += ",\"ld\":" + std::to_string(c.ple_dim);
  s += ",\"V_pl\":" + std::to_string(c.ple_vocab_size);
  s += ",\"embed_scale_pl\":" + json_float(std::sqrt(static_cast<double>(c.ple_dim)));
  s += ",\"dtype\":\"int8\",\"scale_dtype\":\"float32\",\"scale\":\"maxabs/127\",\"round\":\"half_even\"";
  s += ",\"byteorder\":\"little\"}\n";
  return s;
}

bool is_packed_model_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / kPackedFile, ec);
}

}  // namespace ringlm::model
