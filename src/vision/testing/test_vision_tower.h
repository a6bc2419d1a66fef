// Random-weight vision towers of the real Gemma 4 structure for `ringlm make-test-model`:
// the tower's tensors (stored next to the text decoder's, in the same safetensors files),
// and, once the checkpoint is written, the vision_config and image token ids in
// config.json plus the image processor in processor_config.json.
//
// Presets: "tiny" (a few thousand parameters, clipped linears and standardization both on,
// grouped KV heads, so every branch of the encoder is exercised) and "full" (E2B/E4B's
// 768-wide, 16-layer tower, clipped linears, no standardization).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "io/safetensors_writer.h"
#include "io/tensor.h"

namespace ringlm::vision::testing {

// The tower's tensors as stored ("model.vision_tower....", "model.embed_vision...."), for a
// text model of width text_hidden; clip bounds are float32 scalars, the rest `dtype`.
std::vector<io::TensorSpec> test_vision_tensors(const std::string& preset, int text_hidden, io::DType dtype);
// Writes one of those tensors' random bytes (reproducible per seed and name).
void fill_test_vision_tensor(const std::string& preset, int text_hidden, std::uint64_t seed,
                             const io::TensorSpec& spec, const std::function<void(const void*, std::size_t)>& write);
// Adds the vision_config and image token ids to DIR/config.json and writes
// DIR/processor_config.json.
void write_test_vision_config(const std::filesystem::path& dir, const std::string& preset);

}  // namespace ringlm::vision::testing
