// Lattice-exact q4_0: quantizing weights that already lie on an int4 grid (a QAT checkpoint,
// docs/quantization.md) without moving them.
//
// A block of 32 values is "on a lattice" when some scale s and integer codes c_i with
// |c_i| <= 8 (never both -8 and +8 in one block) reproduce every stored value: the source
// value equals c_i * s rounded to the source dtype (so a bf16 file holding bf16(c * s)
// qualifies, and an f32 file holding c * s exactly). Such a block is stored as those codes
// and that scale, whatever sign convention produced it: ggml's layout w = d * (q - 8) holds
// codes in [-8, 7] with d = s and codes in [-7, 8] with d = -s. Blocks not on a lattice get
// ggml's rule (quantize_row_q4_0_ref), bit for bit as before.
//
// ggml's scale is fp16, which cannot hold every bf16 or f32 scale (bf16 scales below fp16's
// normal range, 2^-14, lose bits; f32 scales have 24-bit significands). A row whose lattice
// scales are not all fp16-exact gets one power-of-two factor f: the blocks store s / f (exact
// in fp16 when the row's scales span less than fp16's ~30 binades) and every output of the
// row is multiplied by f after the dot product (WeightMatrix::row_scales). Multiplying by a
// power of two is exact in float, so the result is that of a kernel with exact scales.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/q4_formats.h"
#include "util/dtype.h"

namespace ringlm::kernels {

struct Q4LatticeStats {
  std::uint64_t blocks = 0;   // blocks quantized
  std::uint64_t lattice = 0;  // of them on an int4 lattice
  std::uint64_t exact = 0;    // of those, stored exactly (codes and scale)
  std::uint64_t rows_scaled = 0;  // rows that needed a factor != 1
  void add(const Q4LatticeStats& o) {
    blocks += o.blocks, lattice += o.lattice, exact += o.exact, rows_scaled += o.rows_scaled;
  }
};

// Whether the 32 values x lie on an int4 lattice for a file of dtype `source` (F32, F16 or
// BF16; values as read from it, converted to float); if so *scale and codes[32] (in [-8, 8])
// reproduce them. An all-zero block is on a lattice with scale 0. Non-finite values never are.
bool q4_lattice_block(const float* x, io::DType source, float* scale, std::int8_t* codes);

// One row of k values (k % 32 == 0) into k/32 ggml blocks: lattice blocks exactly (see
// above), the others with ggml's rule. Returns the row's power-of-two factor (1 unless
// `allow_factor` and some lattice scale is not fp16-exact); stats are added to *stats when
// given. With allow_factor false (a GGUF file, which has no place for a factor) inexact
// lattice blocks keep their codes with the nearest fp16 scale and count as not exact.
float quantize_row_q4_0_lattice(const float* x, io::DType source, BlockQ4_0* y, std::size_t k, bool allow_factor,
                                Q4LatticeStats* stats);

// out[i] *= factor for i < n: applying a row's factor to its outputs.
void scale_outputs(float* out, std::size_t n, float factor);

}  // namespace ringlm::kernels
