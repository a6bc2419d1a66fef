// Random-weight vision towers of the real Gemma 4 structure for `ringlm make-test-model`.
// add_test_vision_tower() extends a checkpoint directory make-test-model wrote: the tower
// goes into model-vision.safetensors, config.json gains the vision_config and the image
// token ids, processor_config.json the image processor, and model.safetensors.index.json
// lists every tensor of both files (a normal sharded Hugging Face layout).
//
// Presets: "tiny" (a few thousand parameters, clipped linears and standardization both on,
// grouped KV heads, so every branch of the encoder is exercised) and "full" (E2B/E4B's
// 768-wide, 16-layer tower, clipped linears, no standardization).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "io/tensor.h"

namespace ringlm::vision::testing {

void add_test_vision_tower(const std::filesystem::path& dir, const std::string& preset, std::uint64_t seed,
                           io::DType dtype);

}  // namespace ringlm::vision::testing
