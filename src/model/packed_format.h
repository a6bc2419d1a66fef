// ringlm's packed model directory (written by `ringlm convert`, read by Model::load): what
// goes where, and the byte sizes of everything, computed from the model config alone so the
// writer, the reader and the tests agree. The format is described in docs/convert.md.
//
//   DIR/config.json, generation_config.json, tokenizer files   copied from the checkpoint
//   DIR/weights.rlpk                                            linear layers in q4p16 + small f32 tensors
//   DIR/gemma4_qat_gather_raw/                                  the PLE sidecar (model card layout)
//       embed_per_layer.i8 [Vp, L*ld] int8   embed_per_layer.scale.f32 [Vp]
//       embed_tokens.i8    [V, D] int8       embed_tokens.scale.f32    [V]
//       proj.f32 [L*ld, D]   proj_norm.f32 [ld]   meta.json
//
// weights.rlpk: a 24-byte header
//   bytes 0-7   magic "RLMPACK\0"
//   bytes 8-11  u32 format version (kPackedVersion)
//   bytes 12-15 u32 0 (reserved)
//   bytes 16-23 u64 length of the JSON index that follows
// then the JSON index (UTF-8), zero padding to the first multiple of 64, and the tensors,
// each starting at a multiple of 64 (offsets are from the start of the file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/tensor.h"
#include "model/config.h"

namespace ringlm::model {
struct TensorEntry;
}

namespace ringlm::model {

inline constexpr char kPackedFile[] = "weights.rlpk";
inline constexpr char kSidecarDir[] = "gemma4_qat_gather_raw";
inline constexpr char kPackedMagic[8] = {'R', 'L', 'M', 'P', 'A', 'C', 'K', '\0'};
// Version 2 added each q4p16 tensor's row factors (below); version 1 files still load.
inline constexpr std::uint32_t kPackedVersion = 2;
inline constexpr std::uint32_t kPackedOldestVersion = 1;
inline constexpr char kQuantizationFile[] = "quantization.json";  // convert's q4_0 block counts
inline constexpr char kRowFactorsSuffix[] = ".row_factors";
// The index's "q4_0_rule": how the q4p16 blocks were made (docs/quantization.md). Version 1
// files, which have no such field, used ggml's rule alone.
inline constexpr char kQ4RuleLattice[] = "lattice-exact, else ggml";
inline constexpr char kQ4RuleGgml[] = "ggml";
inline constexpr std::uint64_t kPackedAlignment = 64;
inline constexpr std::uint64_t kPackedHeaderBytes = 24;

// One tensor of weights.rlpk. dtype Q4_0 always means the q4p16 layout (kernels/q4_packed.h).
// Each Q4_0 tensor is followed by its row factors: F32 [rows], layout "row_factors", named
// NAME.row_factors: the power-of-two factor of each row's outputs (kernels/q4_lattice.h;
// 1.0 except in rows of lattice-exact blocks whose scales fp16 cannot hold).
struct PackedTensor {
  std::string name;                 // canonical name (weights.h), e.g. layers.0.mlp.up_proj.weight
  io::DType dtype = io::DType::F32;   // Q4_0 (q4p16) or F32
  std::vector<std::int64_t> shape;  // [rows, cols] or [n]
  std::uint64_t offset = 0;         // from the start of the file, multiple of 64
  std::uint64_t bytes = 0;
  const TensorEntry* entry = nullptr;  // its manifest entry (tensor_manifest.h)
  int layer = -1;                      // -1: a whole-model tensor
  bool row_factors = false;            // the row factors of the Q4_0 tensor before it
};

struct PackedPlan {
  std::vector<PackedTensor> tensors;  // in file order
  std::string index_json;             // the JSON index as written
  std::uint64_t data_start = 0;       // first tensor offset
  std::uint64_t file_bytes = 0;
};

// The tensors of weights.rlpk for `config`, in the manifest's packed order
// (tensor_manifest.h): per layer the linear matrices (q4p16 when the input width is a
// multiple of 32, else F32) and the norms / layer scalar (F32); then
// per_layer_model_projection (q4p16), the LM head `lm_head.weight` (q4p16, from the tied
// embedding when tied), norm.weight and per_layer_projection_norm.weight (F32).
PackedPlan plan_packed(const ModelConfig& config);

// Byte count of a packed tensor's data (q4p16 for Q4_0).
std::uint64_t packed_tensor_bytes(io::DType dtype, const std::vector<std::int64_t>& shape);

struct SidecarFile {
  std::string name;     // file name inside gemma4_qat_gather_raw/
  std::uint64_t bytes;  // exact size
};

// The seven sidecar files with their sizes, in the model card's order.
std::vector<SidecarFile> plan_sidecar(const ModelConfig& config);

// The exact meta.json text (deterministic: fixed field order and number formatting).
std::string sidecar_meta_json(const ModelConfig& config);

// True when `dir` holds weights.rlpk (a converted directory).
bool is_packed_model_dir(const std::filesystem::path& dir);

}  // namespace ringlm::model
