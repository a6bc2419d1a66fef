#include "model/assistant_gguf.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "io/gguf_gemma4.h"
#include "io/gguf_writer.h"
#include "model/gguf_model.h"
#include "model/tensor_manifest.h"
#include "util/error.h"

namespace ringlm::model {
namespace {

// The assistant's own tensors; everything else has the gemma4 model's GGUF name
// (token_embd, output, output_norm, blk.N.*: model/tensor_manifest.h).
struct Named {
  const char* gguf;
  const char* canonical;
};
constexpr Named kOwn[] = {
    {"nextn.pre_projection.weight", "pre_projection.weight"},
    {"nextn.post_projection.weight", "post_projection.weight"},
    {"masked_embd_centroids.weight", "masked_embedding.centroids.weight"},
    {"masked_embd_ordering", "masked_embedding.token_ordering"},  // no ".weight", as llama.cpp names it
};
constexpr std::uint32_t kGgmlI32 = 26;

std::string key(const char* name) { return std::string(kAssistantGgufArch) + "." + name; }

}  // namespace

std::optional<std::string> assistant_canonical_name(std::string_view gguf_name) {
  for (const Named& n : kOwn)
    if (gguf_name == n.gguf) return std::string(n.canonical);
  return gemma4_canonical_name(gguf_name);
}

std::optional<std::string> assistant_gguf_name(std::string_view canonical_name) {
  for (const Named& n : kOwn)
    if (canonical_name == n.canonical) return std::string(n.gguf);
  return gemma4_gguf_name(canonical_name);
}

AssistantConfig assistant_gguf_config(const io::GgufFile& f) {
  const nlohmann::json text = io::gemma4_text_config(f, kAssistantGgufArch);
  const std::int64_t n_layer = text["num_hidden_layers"].get<std::int64_t>();
  if (!f.find(key("embedding_length_out")))
    fail_model_file(f.path(), ": metadata key '", key("embedding_length_out"),
                    "' is missing (the target model's hidden size, backbone_hidden_size)");
  if (f.find(key("nextn_predict_layers")) && f.get_int(key("nextn_predict_layers")) != n_layer)
    fail_model_file(f.path(), ": metadata key '", key("nextn_predict_layers"), "' is ",
                    f.get_int(key("nextn_predict_layers")), ", expected block_count (", n_layer, ")");
  const io::GgufTensorInfo* cent = f.find_tensor("masked_embd_centroids.weight");
  const io::GgufTensorInfo* ord = f.find_tensor("masked_embd_ordering");
  if (!cent != !ord)
    fail_model_file(f.path(), ": tensor '", cent ? "masked_embd_ordering" : "masked_embd_centroids.weight",
                    "' is missing (the centroid head needs both masked_embd_centroids.weight and masked_embd_ordering)");
  nlohmann::json doc;
  doc["model_type"] = "gemma4_assistant";
  doc["backbone_hidden_size"] = f.get_int(key("embedding_length_out"));
  doc["use_ordered_embeddings"] = cent != nullptr;
  if (cent) {
    if (cent->ne.size() != 2)
      fail_model_file(f.path(), ": tensor 'masked_embd_centroids.weight' has ", cent->ne.size(), " dimensions, expected 2");
    const std::int64_t count = cent->ne[1];
    const std::string ck = key("masked_embedding.centroid_count");
    if (f.find(ck) && f.get_int(ck) != count)
      fail_model_file(f.path(), ": metadata key '", ck, "' is ", f.get_int(ck),
                      " but masked_embd_centroids.weight has ", count, " rows");
    doc["num_centroids"] = count;
    doc["centroid_intermediate_top_k"] = f.get_int_or(key("masked_embedding.top_k"), 32);
  }
  doc["text_config"] = text;
  return parse_assistant_config(doc.dump(), f.path());
}

std::shared_ptr<const AssistantModel> load_assistant_gguf(const std::filesystem::path& path,
                                                          const AssistantOptions& options) {
  auto file = std::make_shared<const io::GgufFile>(path);
  AssistantConfig config = assistant_gguf_config(*file);
  auto source = std::make_unique<io::GgufTensorSource>(file, assistant_canonical_name, kAssistantGgufArch, true);
  if (!source->unmapped().empty())
    fail_model_file(path.string(), ": tensor '", source->unmapped().front(),
                    "' is not part of the gemma4-assistant layout this version reads (docs/speculative.md)");
  auto display = [](const std::string& name) {
    const auto g = assistant_gguf_name(name);
    return g ? *g : name;
  };
  // rope_freqs.weight encodes the full layers' partial rotation, already read into the config.
  return AssistantModel::from_source(std::move(config), std::move(source), options, display, {"rope_freqs.weight"});
}

void export_assistant_gguf(const io::TensorSource& source, const nlohmann::json& config,
                           const std::filesystem::path& out, io::DType matrix_type) {
  if (!config.contains("text_config") || !config.contains("backbone_hidden_size"))
    fail("export_assistant_gguf: the config has no text_config or backbone_hidden_size");
  const nlohmann::json& text = config["text_config"];
  io::GgufWriter w;
  io::gemma4_write_metadata(w, text, kAssistantGgufArch);
  w.add_string("general.name", "gemma4 assistant (ringlm export)");
  w.add_u32("general.file_type", llama_file_type(matrix_type));
  w.add_u32("general.quantization_version", 2);
  w.add_u32(key("embedding_length_out"), config["backbone_hidden_size"].get<std::uint32_t>());
  w.add_u32(key("nextn_predict_layers"), text["num_hidden_layers"].get<std::uint32_t>());
  const bool ordered = config.value("use_ordered_embeddings", false);
  if (ordered) {
    w.add_u32(key("masked_embedding.centroid_count"), config.value("num_centroids", 2048u));
    w.add_u32(key("masked_embedding.top_k"), config.value("centroid_intermediate_top_k", 32u));
  }
  GgufExportResult result;
  std::vector<std::int32_t> ordering;  // outlives w.write()
  auto names = source.names();
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (!ordered && name.starts_with("masked_embedding.")) continue;
    const auto gguf_name = assistant_gguf_name(name);
    if (!gguf_name) fail("export_assistant_gguf: tensor ", name, " has no gemma4-assistant GGUF name");
    const io::TensorView& v = *source.find(name);
    if (name != "masked_embedding.token_ordering") {
      add_gguf_tensor(w, *gguf_name, v, matrix_type, result);
      continue;
    }
    if (v.dtype != io::DType::I64 && v.dtype != io::DType::I32)
      fail("export_assistant_gguf: tensor ", name, " is ", io::dtype_name(v.dtype), ", expected I64 or I32");
    const std::size_t es = v.dtype == io::DType::I64 ? 8 : 4;
    ordering.resize(static_cast<std::size_t>(v.nbytes) / es);
    for (std::size_t i = 0; i < ordering.size(); ++i) {
      std::int64_t t = 0;
      std::memcpy(&t, v.data + i * es, es);  // little-endian: the low bytes of an I64 are its value
      if (es == 4) t = static_cast<std::int32_t>(t);
      ordering[i] = static_cast<std::int32_t>(t);
    }
    w.add_tensor(*gguf_name, kGgmlI32, {static_cast<std::int64_t>(ordering.size())},
                 {reinterpret_cast<const std::uint8_t*>(ordering.data()), ordering.size() * 4});
  }
  const std::vector<float> ff = io::gemma4_rope_freqs(text);
  if (!ff.empty())
    w.add_tensor("rope_freqs.weight", io::ggml_type_of(io::DType::F32), {static_cast<std::int64_t>(ff.size())},
                 {reinterpret_cast<const std::uint8_t*>(ff.data()), ff.size() * 4});
  w.write(out);
}

}  // namespace ringlm::model
