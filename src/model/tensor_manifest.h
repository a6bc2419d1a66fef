// The Gemma 4 text decoder's tensors, in one table (tensor_manifest.cpp): for each one its
// canonical (Hugging Face) name, its llama.cpp GGUF name, its kind, when a model has it,
// its shape as a function of the config and the layer, where it sits in weights.rlpk, and
// the ModelWeights member it binds to. Binding (weights.cpp), the packed directory's plan
// (packed_format.cpp), `ringlm convert` (converter.cpp), the GGUF names (below) and the
// random test checkpoints (testing/test_checkpoint.cpp) all walk this table, so a tensor
// is named and shaped in one place. The vision and audio towers are not in it.
//
// The GGUF names live here, not in io, because io sits below model in the module graph
// (docs/modules.md) and this table binds to model types; io's GgufTensorSource takes the
// name map as an argument (gguf_tensor_source() below builds one with it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "io/gguf_gemma4.h"
#include "model/config.h"
#include "model/weights.h"

namespace ringlm::model {

enum class TensorKind {
  linear,     // a matrix the forward pass multiplies by
  norm,       // an RMSNorm weight vector
  scalar,     // a one-element vector (the layer scalar)
  embedding,  // the token embedding: rows gathered (and the LM head when tied)
  ple_table,  // the per-layer embedding table: rows gathered only
};

// When a model carries the tensor.
enum class Presence {
  always,
  own_kv,  // layers that own their KV cache; KV-shared layers read another layer's
  ple,     // models with per-layer embeddings (ple_dim > 0)
  head,    // the LM head: its own tensor when untied; when tied the token embedding serves
};

// A dimension of a shape, evaluated against the config and the layer.
enum class Dim { none, one, hidden, vocab, ple_vocab, ple_dim, ple_total, q_out, kv_out, head_dim, mlp };

using TensorMember = std::variant<WeightMatrix ModelWeights::*, std::vector<float> ModelWeights::*,
                                  WeightMatrix LayerWeights::*, std::vector<float> LayerWeights::*,
                                  float LayerWeights::*>;

struct TensorEntry {
  const char* name;        // canonical; per-layer entries follow "layers.N."
  const char* gguf;        // llama.cpp's; per-layer entries follow "blk.N."
  const char* gguf_alias;  // an older llama.cpp spelling accepted when reading, or nullptr
  TensorKind kind;
  Presence presence;
  Dim rows, cols;          // a vector has cols == Dim::none
  int packed_slot;         // order in weights.rlpk (within a layer, or in the tail); -1: not there
  TensorMember member;
};

// Whole-model entries, then per-layer entries, each in the order a Hugging Face checkpoint
// (and make-test-model) lays them out.
std::span<const TensorEntry> global_tensor_entries();
std::span<const TensorEntry> layer_tensor_entries();

// One entry made concrete for a config (and a layer).
struct ManifestTensor {
  const TensorEntry* entry = nullptr;
  int layer = -1;                   // -1: a whole-model tensor
  std::string name;                 // canonical, e.g. layers.3.mlp.up_proj.weight
  std::vector<std::int64_t> shape;  // [rows, cols] or [n]
  bool present = false;             // the config calls for it (see Presence; a head is present when untied)
};

// Every entry for `config`, present or not: the whole-model ones, then layer 0's, 1's, ...
std::vector<ManifestTensor> manifest_tensors(const ModelConfig& config);

// The member a tensor binds to (nullptr when it is of another type).
WeightMatrix* matrix_of(ModelWeights& w, const ManifestTensor& t);
const WeightMatrix* matrix_of(const ModelWeights& w, const ManifestTensor& t);
std::vector<float>* vector_of(ModelWeights& w, const ManifestTensor& t);
const std::vector<float>* vector_of(const ModelWeights& w, const ManifestTensor& t);
float* scalar_of(ModelWeights& w, const ManifestTensor& t);
const float* scalar_of(const ModelWeights& w, const ManifestTensor& t);

// The canonical name of a whole-model tensor's member (for messages naming it).
const char* tensor_name(WeightMatrix ModelWeights::* member);

enum class MatrixSet {
  all,     // every matrix member, the embedding tables included
  linear,  // the ones the forward pass multiplies by (kind linear): what q4_0 quantizes
};

// The one matrix walker: fn(WeightMatrix&) on each matrix member of `w` in `set`, unbound
// ones included (rows == 0: k/v of KV-shared layers, PLE blocks without per-layer
// embeddings); per layer first, then the whole-model ones.
void for_each_matrix(ModelWeights& w, MatrixSet set, const std::function<void(WeightMatrix&)>& fn);

// llama.cpp name -> canonical name ("blk.3.attn_q.weight" -> "layers.3.self_attn.q_proj.weight"),
// or nullopt for a name the gemma4 architecture does not have. `rope_freqs.weight` has no
// Hugging Face counterpart and keeps its name.
std::optional<std::string> gemma4_canonical_name(std::string_view gguf_name);
// The inverse, for writing GGUF files (the names llama.cpp writes, never the old aliases).
std::optional<std::string> gemma4_gguf_name(std::string_view canonical_name);

// A gemma4 GGUF file's tensors under their canonical names.
std::unique_ptr<io::GgufTensorSource> gguf_tensor_source(std::shared_ptr<const io::GgufFile> file);

}  // namespace ringlm::model
