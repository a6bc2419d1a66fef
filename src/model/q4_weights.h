// `--weights q4_0`: replaces the model's linear-layer matrices by q4_0 copies (blocks on an
// int4 lattice kept exactly, the rest with ggml's rounding: kernels/q4_lattice.h; q4p16 layout, see kernels/q4_packed.h) made at load time from the stored
// weights. matmul() then runs them on the w4a8 kernels (kernels/q4_weight_matmul.h).
//
// Quantized: q/k/v/o, gate/up/down, the per-layer gate and projection, the per-layer model
// projection, and the LM head (a separate copy when tied: embed_tokens stays stored for the
// row lookups). A matrix whose input width is not a multiple of 32 (only in tiny test
// models) stays stored and runs on the float path.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/q4_lattice.h"
#include "kernels/q4_packed.h"
#include "model/weights.h"

namespace ringlm::model {

struct QuantizedWeightsInfo {
  std::size_t matrices = 0, skipped = 0;
  std::size_t bytes = 0;  // packed bytes owned
  double seconds = 0.0;   // wall time spent
  kernels::Q4LatticeStats q4;  // quantize_weights_q4_0: blocks on an int4 lattice / kept exactly
};

// Quantizes in place (rows split over the default kernel thread pool); the returned buffers
// own the packed data and must outlive `weights`. The stored pages of each quantized matrix
// are handed back to the kernel afterwards (madvise MADV_PAGEOUT), so the resident set holds
// the q4_0 copies, not the bf16 originals (the tied embedding's rows fault back in on use).
std::vector<kernels::Q4PackedBuffer> quantize_weights_q4_0(ModelWeights& weights, QuantizedWeightsInfo* info = nullptr);

// The matrices another model holds (the assistant drafter, model/assistant.h), for the same
// load-time conversions below: each(fn) calls fn on every matrix to convert.
using MatrixVisitor = std::function<void(const std::function<void(kernels::WeightMatrix&)>&)>;
std::vector<kernels::Q4PackedBuffer> quantize_weights_q4_0(const MatrixVisitor& each, QuantizedWeightsInfo* info = nullptr);

// Plain ggml Q4_0, Q4_K, Q6_K, Q8_0, IQ4_XS, Q3_K and Q5_K matrices (as a GGUF file stores
// them) among the same matrices -> the kernels' 16-row layouts, in place: Q4_0 -> q4p16
// (kernels/q4_packed.h, w4a8 kernels), Q4_K -> q4kp16, Q6_K -> q6kp16, Q8_0 -> q8p16, IQ4_XS ->
// iq4xsp16, Q3_K -> q3kp16, Q5_K -> q5kp16 (kernels/q4k_packed.h, q6k_packed.h, q8p16_packed.h,
// iq4xs_packed.h, q3k_packed.h, q5k_packed.h). Exact and cheap: code bits regrouped, scales copied; 16-row
// groups split over the default kernel thread pool; then the file's pages of each repacked
// matrix are handed back as above. A tied LM head gets its own packed copy (the embedding
// lookup keeps the file's rows). Other types are left alone (no-op on float checkpoints;
// Q4_1 runs on the scalar decoder).
// quantize_weights_q4_0 skips packed matrices.
// RepackTypes::q4_0_only leaves every other type as stored (a device model uploads those).
enum class RepackTypes { all, q4_0_only };
std::vector<kernels::Q4PackedBuffer> repack_gguf_blocks(ModelWeights& weights, QuantizedWeightsInfo* info = nullptr,
                                                        RepackTypes types = RepackTypes::all);
std::vector<kernels::Q4PackedBuffer> repack_gguf_blocks(const MatrixVisitor& each, QuantizedWeightsInfo* info = nullptr,
                                                        RepackTypes types = RepackTypes::all);

// The q4p16 matrices of a converted directory (already packed, read from its file mapping)
// -> owned copies in anonymous memory on huge pages (kernels::Q4PackedBuffer), in place;
// the file's pages of each copied matrix are then unmapped through `drop` (the page cache
// keeps them for the next load). Why: the decode GEMVs stream all of them every token, and
// on this kind of host a file mapping's 4 KiB page-cache pages read 10-20 % slower than
// anonymous huge pages (BENCHMARKS.md, "packed directory vs GGUF"). Costs one copy at load
// (about 0.3 s for E2B's 1.28 GB) and the pages are no longer shared between processes.
// Row factors and float matrices stay mapped (small). A matrix is copied once even when
// several members point at it.
std::vector<kernels::Q4PackedBuffer> copy_packed_to_memory(
    ModelWeights& weights, const std::function<void(const void*, std::size_t)>& drop,
    QuantizedWeightsInfo* info = nullptr);

struct SlowBlocksInfo {
  std::size_t matrices = 0;
  std::string types;               // e.g. "Q5_0, IQ4_NL"
  std::uint64_t file_bytes = 0;    // their bytes in the file
  std::uint64_t memory_bytes = 0;  // their q8p16 copies
};

// GGUF matrices of a type with no kernel of its own (Q5_0, Q5_1, Q2_K, IQ4_NL, IQ1/2/3)
// -> Q8_0 (decoded, then q8_0-rounded) in the q8p16 layout, for the int8-activation kernels.
// Costs memory (8.5 bits a weight) and adds Q8_0's rounding; without it these matrices run on
// the float path, decoding every row at every use (exact: the model's `--activations f32`).
std::vector<kernels::Q4PackedBuffer> convert_slow_gguf_blocks(ModelWeights& weights, SlowBlocksInfo* info = nullptr);
std::vector<kernels::Q4PackedBuffer> convert_slow_gguf_blocks(const MatrixVisitor& each, SlowBlocksInfo* info = nullptr);

}  // namespace ringlm::model
