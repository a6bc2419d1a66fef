// Random-weight audio towers of the real Gemma 4 structure for `ringlm make-test-model`:
// the tower's tensors (stored next to the text decoder's, in the same safetensors files),
// and, once the checkpoint is written, the audio_config and audio token ids in config.json
// plus the feature extractor in processor_config.json.
//
// Presets: "tiny" (2 layers of width 32, 4 heads, 128 then 8 subsampling channels, an
// output projection of 24 so that no two widths coincide, clipped linears on) and "full"
// (E2B/E4B's 1024-wide, 12-layer Conformer with the default Gemma4AudioConfig). Both use the
// released feature extractor (128 mel bins, 16 kHz, 20 ms frames every 10 ms).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "io/safetensors_writer.h"
#include "io/tensor.h"

namespace ringlm::audio::testing {

// The tower's tensors as stored ("model.audio_tower....", "model.embed_audio...."), for a
// text model of width text_hidden; clip bounds are float32 scalars, the rest `dtype`.
std::vector<io::TensorSpec> test_audio_tensors(const std::string& preset, int text_hidden, io::DType dtype);
// Writes one of those tensors' random bytes (reproducible per seed and name).
void fill_test_audio_tensor(const std::string& preset, int text_hidden, std::uint64_t seed, const io::TensorSpec& spec,
                            const std::function<void(const void*, std::size_t)>& write);
// Adds the audio_config and audio token ids to DIR/config.json and the feature extractor
// (and audio_seq_length) to DIR/processor_config.json, creating it if needed.
void write_test_audio_config(const std::filesystem::path& dir, const std::string& preset);

}  // namespace ringlm::audio::testing
