// `ringlm convert`'s two outputs for the vision/audio towers of a Hugging Face checkpoint:
// towers.rlpk in a packed model directory (io/packed_towers.h, the checkpoint's own names
// and layouts) and a llama.cpp mmproj GGUF (io/mmproj.h, llama.cpp's names, layouts and
// metadata). Both take the tower matrices as f16 or q8_0; norms, biases, clip bounds, the
// position table and the audio convolution kernels stay f32 (what llama.cpp's converter
// does), and a q8_0 matrix whose rows are not a multiple of 32 falls back to f16.
#pragma once

#include <filesystem>
#include <string>

#include "util/dtype.h"

namespace ringlm::cli {

struct TowerExportResult {
  bool vision = false, audio = false;
  int tensors = 0;
  int matrices = 0;      // in the requested type
  int fallback_f16 = 0;  // q8_0 asked, rows not a multiple of 32
  std::uint64_t bytes = 0;
};

// "f16" or "q8_0" (any case); throws ringlm::Error naming the flag otherwise.
io::DType parse_tower_type(const std::string& type);

// Writes DIR/towers.rlpk (and copies the processor config) when the checkpoint has towers;
// removes a stale towers.rlpk when it has none.
TowerExportResult export_packed_towers(const std::filesystem::path& hf_dir, const std::filesystem::path& out_dir,
                                       io::DType matrix_type);

// Writes an mmproj GGUF; throws ringlm::Error when the checkpoint has no tower, or when its
// processor settings are ones an mmproj cannot carry (llama.cpp hard-codes them).
TowerExportResult export_mmproj(const std::filesystem::path& hf_dir, const std::filesystem::path& out,
                                io::DType matrix_type);

}  // namespace ringlm::cli
